/**
 * larik-jupyter: the "Larik sessions" sidebar, its commands, and the `window.larikJupyter` hook.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Dialog, ICommandPalette, Notification, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { PageConfig, PathExt } from '@jupyterlab/coreutils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { IStatusBar } from '@jupyterlab/statusbar';
import { listIcon } from '@jupyterlab/ui-components';

import * as api from './api';
import { answerApprovalsInPage } from './approvals';
import { NotebookBridge } from './bridge';
import { CommandIDs } from './commands';
import { addFixButton } from './fix';
import { addNavigation } from './navigate';
import { insertCellBelow, openInNotebook, runAgainBelow, undoLine } from './notebook';
import { plainPromptCells } from './promptcells';
import { SessionsPanel } from './sidebar';
import { interruptOnStop } from './stop';
import { addTurnStatus } from './waiting';

/** The hook other larik_jupyter front-end pieces (notebook widgets) call. */
export interface ILarikJupyterHook {
  insertCellBelow(code: string): boolean;
  /** Select the cells prompt `prompt` of `session` changed; resolves to how many. */
  jumpToCells(session: string, prompt: number): Promise<number>;
  /** Open a file the kernel wrote (an absolute path under the server root) in a tab. */
  openPath(path: string): boolean;
}

/** `path` relative to the server root, or null when it lies outside (or the root is unknown). */
function serverRelative(path: string): string | null {
  const root = PageConfig.getOption('serverRoot').replace(/\/+$/, '');
  return root && path.startsWith(root + '/') ? path.slice(root.length + 1) : null;
}

declare global {
  interface Window {
    larikJupyter?: ILarikJupyterHook;
  }
}

function download(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const anchor = document.createElement('a');
  anchor.href = url;
  anchor.download = filename;
  document.body.appendChild(anchor);
  anchor.click();
  anchor.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'larik-jupyter:sessions',
  description: 'Browse larik_jupyter agent sessions in a sidebar.',
  autoStart: true,
  requires: [INotebookTracker, IRenderMimeRegistry],
  optional: [ICommandPalette, IDefaultFileBrowser, IStatusBar],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    rendermime: IRenderMimeRegistry,
    palette: ICommandPalette | null,
    browser: IDefaultFileBrowser | null,
    statusBar: IStatusBar | null
  ) => {
    window.larikJupyter = {
      insertCellBelow: (code: string) => insertCellBelow(tracker, code),
      jumpToCells: async (session: string, prompt: number) =>
        (await app.commands.execute(CommandIDs.jumpToCells, { session, prompt, inline: true })) as number,
      openPath: (path: string) => {
        const relative = serverRelative(path);
        if (relative !== null) {
          void app.commands.execute('docmanager:open', { path: relative });
        }
        return relative !== null;
      }
    };
    const bridge = new NotebookBridge(tracker);
    bridge.onError = addFixButton;

    const panel = new SessionsPanel(app.commands, rendermime);
    panel.title.icon = listIcon;
    app.shell.add(panel, 'left', { rank: 600 });
    addNavigation(app, tracker, panel, bridge);
    // The sidebar lists the sessions of the folder the user is in: the open notebook's (its
    // kernel's working directory), else the file browser's. Notebook 7 opens a notebook in a
    // page of its own whose file browser stays at the server root, so the notebook decides.
    const followNotebook = () => {
      const current = tracker.currentWidget;
      if (current) {
        panel.cwd = PathExt.dirname(current.context.path);
      }
    };
    if (browser) {
      panel.cwd = browser.model.path;
      browser.model.pathChanged.connect((_, change) => {
        panel.cwd = change.newValue ?? '';
      });
    }
    tracker.currentChanged.connect(followNotebook);
    followNotebook();

    const target = (args: { id?: unknown }): string | null =>
      typeof args.id === 'string' ? args.id : panel.selected;
    const hasTarget = (args: { id?: unknown }) => target(args) !== null;

    app.commands.addCommand(CommandIDs.show, {
      label: 'Show Larik Sessions',
      // Every shell (JupyterLab's, Notebook 7's) opens its side panel for the widget.
      execute: () => app.shell.activateById(panel.id)
    });
    app.commands.addCommand(CommandIDs.refresh, {
      label: 'Refresh Larik Sessions',
      execute: () => panel.refresh()
    });
    app.commands.addCommand(CommandIDs.openInNotebook, {
      label: 'Open Larik Session in Notebook',
      isEnabled: hasTarget,
      execute: async args => {
        const id = target(args);
        if (id) {
          await openInNotebook(app, tracker, panel.cwd, id);
        }
      }
    });
    app.commands.addCommand(CommandIDs.undoInNotebook, {
      label: "Undo an Outside Agent's Last Call in the Notebook",
      isEnabled: hasTarget,
      execute: async args => {
        const id = target(args);
        if (id) {
          await openInNotebook(app, tracker, panel.cwd, id, undoLine(id));
        }
      }
    });
    app.commands.addCommand(CommandIDs.exportSession, {
      label: 'Export Larik Session as Markdown',
      isEnabled: hasTarget,
      execute: async args => {
        const id = target(args);
        if (!id) {
          return;
        }
        try {
          download(await api.exportMarkdown(panel.cwd, id), `${id}.md`);
          Notification.success(`Exported ${id} as ${id}.md to your browser's downloads folder.`, { autoClose: 8000 });
        } catch (error) {
          await showErrorMessage('Export failed', (error as Error).message);
        }
      }
    });
    app.commands.addCommand(CommandIDs.openAsNotebook, {
      label: 'Open Larik Session as Notebook',
      caption: 'Write the branch as a new runnable notebook next to its sessions and open it',
      isEnabled: hasTarget,
      execute: async args => {
        const id = target(args);
        if (!id) {
          return;
        }
        const at = typeof args.prompt === 'number' ? args.prompt : null;
        try {
          const path = await api.writeNotebook(panel.cwd, id, at);
          await app.commands.execute('docmanager:open', { path });
        } catch (error) {
          await showErrorMessage('Open as notebook failed', (error as Error).message);
        }
      }
    });
    app.commands.addCommand(CommandIDs.deleteSession, {
      label: 'Delete Larik Session…',
      isEnabled: hasTarget,
      execute: async args => {
        const id = target(args);
        const info = id ? panel.session(id) : undefined;
        if (!id || !info) {
          return;
        }
        const answer = await showDialog({
          title: 'Delete session?',
          body: `Delete session ${id} ("${info.first_prompt}")? Its transcript file is removed; this cannot be undone.`,
          buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Delete' })]
        });
        if (!answer.button.accept) {
          return;
        }
        try {
          await api.deleteSession(panel.cwd, id, info.delete_token);
        } catch (error) {
          await showErrorMessage('Delete failed', (error as Error).message);
        }
        await panel.refresh();
      }
    });
    runAgainBelow(tracker);
    interruptOnStop(tracker);
    answerApprovalsInPage(tracker);
    plainPromptCells(tracker);
    if (statusBar) {
      addTurnStatus(tracker, statusBar);
    }
    if (palette) {
      for (const command of Object.values(CommandIDs)) {
        palette.addItem({ command, category: 'Larik' });
      }
    }
  }
};

export default plugin;
