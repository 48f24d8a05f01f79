/**
 * Putting code cells into notebooks: the `window.larikJupyter` hook and "open in notebook".
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { INotebookTracker, Notebook, NotebookPanel } from '@jupyterlab/notebook';

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

/**
 * Put a resume cell for `id` into the current notebook, or into a new notebook created
 * in `cwd` when none is open.
 */
export async function openInNotebook(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  cwd: string,
  id: string
): Promise<void> {
  if (insertCellBelow(tracker, resumeLine(id))) {
    app.shell.activateById(tracker.currentWidget!.id);
    return;
  }
  const panel: NotebookPanel = await app.commands.execute('notebook:create-new', { cwd });
  await panel.context.ready;
  const first = panel.content.model?.sharedModel.cells[0];
  if (first && first.cell_type === 'code' && first.getSource() === '') {
    first.setSource(resumeLine(id));
  } else {
    insertCodeCellBelow(panel.content, resumeLine(id));
  }
  app.shell.activateById(panel.id);
}
