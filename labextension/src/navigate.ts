/**
 * The commands between a cell the agent changed and its prompt: "Open prompt in Larik sidebar"
 * (also the marker's click and the cell's context menu) and "Jump to cells" (the sidebar's
 * prompts, the fork tree's prompt rows through `window.larikJupyter`, the context menu).
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';
import { INotebookTracker } from '@jupyterlab/notebook';

import { NotebookBridge } from './bridge';
import { CommandIDs } from './commands';
import { activeProvenance, IProvenance, jumpToCells, provenanceOf, showInTrees, touchedCells } from './provenance';
import { SessionsPanel } from './sidebar';

const CELL_MENU = '.jp-Notebook .jp-Cell';

/** A prompt to navigate to, and the notebook it was reached from. */
interface IPlace {
  target: IProvenance;
  path: string;
}

export function addNavigation(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  sidebar: SessionsPanel,
  bridge: NotebookBridge
): void {
  // From the context menu: the cell it was opened on (a right-click in a cell's editor does not
  // make that cell active). Otherwise the arguments name the prompt (the marker, the sidebar,
  // the tree), and without them it is the active cell's.
  const placeOf = (args: { clicked?: unknown; path?: unknown }): IPlace | null => {
    if (args.clicked) {
      const node = app.contextMenuHitTest(n => n.classList.contains('jp-Cell'));
      const panel = node ? tracker.find(p => p.content.node.contains(node)) : undefined;
      const cell = panel?.content.widgets.find(w => w.node === node);
      const target = provenanceOf(cell?.model.getMetadata('larik'));
      return panel && target ? { target, path: panel.context.path } : null;
    }
    const target = provenanceOf(args) ?? activeProvenance(tracker);
    const path = typeof args.path === 'string' ? args.path : (tracker.currentWidget?.context.path ?? '');
    return target ? { target, path } : null;
  };
  const hasTarget = (args: object) => placeOf(args) !== null;

  app.commands.addCommand(CommandIDs.openPrompt, {
    label: 'Open prompt in Larik sidebar',
    caption: 'Show the prompt that changed this cell in the Larik sessions sidebar',
    isEnabled: hasTarget,
    isVisible: hasTarget,
    execute: async args => {
      const place = placeOf(args);
      if (!place) {
        return;
      }
      const { target, path } = place;
      app.shell.activateById(sidebar.id);
      showInTrees(target);
      // The kernel's sessions are those of its working directory, the notebook's folder.
      const problem = await sidebar.openPrompt(PathExt.dirname(path), target.session, target.prompt);
      if (problem) {
        Notification.warning(problem, { autoClose: 8000 });
      }
    }
  });
  app.commands.addCommand(CommandIDs.jumpToCells, {
    label: args => {
      const place = placeOf(args);
      return place ? `Jump to cells of prompt ${place.target.prompt}` : 'Jump to cells';
    },
    caption: 'Select the cells of the open notebooks that this prompt created or changed',
    isEnabled: hasTarget,
    isVisible: hasTarget,
    execute: args => {
      const target = placeOf(args)?.target;
      if (!target) {
        return 0;
      }
      const found = jumpToCells(tracker, panel => app.shell.activateById(panel.id), target);
      if (!found) {
        if (!args.inline) {
          // A caller that reports in place (the /tree widget) says it once itself.
          Notification.info(
            `No open notebook has a cell that prompt ${target.prompt} of session ${target.session} changed: they were undone, or the notebook it edited is not open.`,
            { autoClose: 8000 }
          );
        }
        return 0;
      }
      return found.indexes.length;
    }
  });
  app.contextMenu.addItem({ command: CommandIDs.openPrompt, selector: CELL_MENU, rank: 30, args: { clicked: true } });
  app.contextMenu.addItem({ command: CommandIDs.jumpToCells, selector: CELL_MENU, rank: 31, args: { clicked: true } });

  bridge.onMarkerClick = (panel, target) =>
    void app.commands.execute(CommandIDs.openPrompt, { ...target, path: panel.context.path });
  sidebar.touchedCells = () => touchedCells(tracker);
  const update = () => sidebar.updateJumps();
  tracker.currentChanged.connect(update);
  tracker.widgetAdded.connect((_, panel) => {
    void panel.context.ready.then(update);
    panel.disposed.connect(update);
  });
}
