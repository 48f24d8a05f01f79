/**
 * Putting code cells into notebooks: the `window.larikJupyter` hook and "open in notebook".
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { INotebookTracker, Notebook, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';

/** Insert a code cell holding `code` below the active cell of `notebook` and select it. */
export function insertCodeCellBelow(notebook: Notebook, code: string): void {
  const model = notebook.model;
  if (!model) {
    return;
  }
  const index = notebook.activeCell ? notebook.activeCellIndex + 1 : model.cells.length;
  model.sharedModel.insertCell(index, { cell_type: 'code', source: code });
  notebook.activeCellIndex = index;
  notebook.deselectAll();
  notebook.mode = 'command';
  void notebook.scrollToItem(index);
}

/** Insert a cell below the active cell of the current notebook; false when no notebook is open. */
export function insertCellBelow(tracker: INotebookTracker, code: string): boolean {
  const panel = tracker.currentWidget;
  if (!panel) {
    return false;
  }
  insertCodeCellBelow(panel.content, code);
  return true;
}

/** The line that resumes a session in a kernel. */
export function resumeLine(id: string): string {
  return `%larik /resume ${id}`;
}

/** The line that undoes an outside agent's last call in session `id`, the notebook staying on its own. */
export function undoLine(id: string): string {
  return `%larik /undo --session ${id}`;
}

/**
 * Put `line` (by default, a resume cell for `id`) into the current notebook, or into a new
 * notebook created in `cwd` when none is open; the person runs it.
 */
export async function openInNotebook(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  cwd: string,
  id: string,
  line: string = resumeLine(id)
): Promise<void> {
  if (insertCellBelow(tracker, line)) {
    app.shell.activateById(tracker.currentWidget!.id);
    return;
  }
  const panel: NotebookPanel = await app.commands.execute('notebook:create-new', { cwd });
  await panel.context.ready;
  const first = panel.content.model?.sharedModel.cells[0];
  if (first && first.cell_type === 'code' && first.getSource() === '') {
    first.setSource(line);
  } else {
    insertCodeCellBelow(panel.content, line);
  }
  app.shell.activateById(panel.id);
}

/**
 * A session widget of an ended kernel asks to run its command again (`larik-run-again`, from
 * larik_jupyter/frontends/notebook/widgets/shared.js): a cell with that command goes below the widget's
 * cell, in the kernel the notebook has now, and runs.
 */
export function runAgainBelow(tracker: INotebookTracker): void {
  document.addEventListener('larik-run-again', event => {
    const code = (event as CustomEvent).detail?.code;
    const target = event.target as Node;
    const panel = tracker.find(p => p.node.contains(target));
    if (!panel || typeof code !== 'string') {
      return;
    }
    const index = panel.content.widgets.findIndex(cell => cell.node.contains(target));
    if (index < 0) {
      return;
    }
    event.preventDefault();
    panel.content.model?.sharedModel.insertCell(index + 1, { cell_type: 'code', source: code });
    panel.content.activeCellIndex = index + 1;
    panel.content.deselectAll();
    void NotebookActions.run(panel.content, panel.sessionContext);
  });
}
