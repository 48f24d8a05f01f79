/**
 * A `%%larik` cell's body (or a cell of `%larik` lines) is a prompt in words, not Python: its editor shows it as plain text,
 * as classic Notebook mapped `%%bash` cells to a shell mode. JupyterLab gives every code cell
 * the kernel's language (and gives it again when the kernel's language info arrives), so each
 * code cell's language follows its first line, checked whenever its text or language changes.
 */
import { ICellModel } from '@jupyterlab/cells';
import { INotebookTracker, Notebook, NotebookPanel } from '@jupyterlab/notebook';

/** The editor language of a `%%larik` cell: plain text, no highlighting. */
export const PROMPT_MIMETYPE = 'text/plain';

/**
 * Whether `source` is a prompt in words: a `%%larik` cell (IPython skips blank lines before a
 * cell magic), or a cell whose every line is a `%larik` line. A cell mixing Python and
 * `%larik` lines stays Python.
 */
export function isPromptCell(source: string): boolean {
  if (/^\s*%%larik(\s|$)/.test(source)) {
    return true;
  }
  const lines = source.split('\n').filter(line => line.trim());
  return lines.length > 0 && lines.every(line => /^\s*%larik(\s|$)/.test(line));
}

function follow(notebook: Notebook, cell: ICellModel, seen: WeakSet<ICellModel>): void {
  if (cell.type !== 'code' || seen.has(cell)) {
    return;
  }
  seen.add(cell);
  const apply = () => {
    const wanted = isPromptCell(cell.sharedModel.getSource()) ? PROMPT_MIMETYPE : notebook.codeMimetype;
    if (cell.mimeType !== wanted) {
      cell.mimeType = wanted;
    }
  };
  cell.contentChanged.connect(apply);
  cell.mimeTypeChanged.connect(apply);
  apply();
}

/** Show the body of every `%%larik` cell of every notebook as plain text. */
export function plainPromptCells(tracker: INotebookTracker): void {
  const seen = new WeakSet<ICellModel>();
  const watch = (panel: NotebookPanel) => {
    const notebook = panel.content;
    const attach = () => {
      const model = notebook.model;
      if (!model) {
        return;
      }
      for (const cell of model.cells) {
        follow(notebook, cell, seen);
      }
      model.cells.changed.connect((_, change) => {
        for (const cell of change.newValues) {
          follow(notebook, cell, seen);
        }
      });
    };
    notebook.modelChanged.connect(attach);
    attach();
  };
  tracker.forEach(watch);
  tracker.widgetAdded.connect((_, panel) => watch(panel));
}
