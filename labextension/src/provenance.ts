/**
 * Provenance navigation: a cell the agent changed carries `"larik": {"session", "prompt", …}`
 * in its metadata; from such a cell to its prompt, and from a prompt to the cells it changed in
 * the open notebooks (found in each document model, so saved cells count as well as live edits).
 */
import { ICellModel } from '@jupyterlab/cells';
import { INotebookTracker, Notebook, NotebookPanel } from '@jupyterlab/notebook';

/** Which prompt of which session created or last changed a cell. */
export interface IProvenance {
  session: string;
  prompt: number;
}

/** The cells of one notebook that one prompt touched. */
export interface ITouched {
  panel: NotebookPanel;
  indexes: number[];
}

/** The event an open fork tree listens to, to select the prompt "Open prompt" names. */
export const SHOW_PROMPT_EVENT = 'larik-jupyter:show-prompt';

/**
 * Call `marked` for each cell of `panel` whose `larik` metadata names a prompt: once the
 * notebook is ready, and whenever a cell's changes to one or a cell comes with one (an edit
 * another page applied, arriving through the shared document). Called once the change is
 * through: the same change's new source would otherwise take the new marker off as a hand edit.
 */
export function followMarks(panel: NotebookPanel, marked: (id: string, target: IProvenance) => void): void {
  const follow = (cell: ICellModel) => {
    const target = provenanceOf(cell.getMetadata('larik'));
    if (target) {
      marked(cell.id, target);
    }
    cell.metadataChanged.connect((_, change) => {
      const now = change.key === 'larik' ? provenanceOf(change.newValue) : null;
      if (now) {
        queueMicrotask(() => marked(cell.id, now));
      }
    });
  };
  void panel.context.ready.then(() => {
    const model = panel.content.model;
    if (!model) {
      return;
    }
    for (const cell of model.cells) {
      follow(cell);
    }
    model.cells.changed.connect((_, change) => {
      if (change.type === 'add') {
        change.newValues.forEach(follow);
      }
    });
  });
}

/** The prompt named by `value` (a cell's `larik` metadata or command arguments), if it names one. */
export function provenanceOf(value: unknown): IProvenance | null {
  const { session, prompt } = (value ?? {}) as { session?: unknown; prompt?: unknown };
  if (typeof session !== 'string' || !session || typeof prompt !== 'number' || !Number.isInteger(prompt)) {
    return null;
  }
  return { session, prompt };
}

/** The provenance of the active cell of the current notebook, if the agent changed it. */
export function activeProvenance(tracker: INotebookTracker): IProvenance | null {
  return provenanceOf(tracker.activeCell?.model.getMetadata('larik'));
}

function key(target: IProvenance): string {
  return `${target.session}:${target.prompt}`;
}

/** The open notebook panels, the current one first. */
function panels(tracker: INotebookTracker): NotebookPanel[] {
  const current = tracker.currentWidget;
  const all: NotebookPanel[] = current ? [current] : [];
  tracker.forEach(panel => {
    if (panel !== current) {
      all.push(panel);
    }
  });
  return all;
}

/** For each open notebook, the indexes of its cells by the prompt that touched them. */
function touchedByPrompt(tracker: INotebookTracker): Map<string, ITouched[]> {
  const found = new Map<string, ITouched[]>();
  for (const panel of panels(tracker)) {
    const cells = panel.content.model?.sharedModel.cells ?? [];
    const here = new Map<string, number[]>();
    cells.forEach((cell, index) => {
      const target = provenanceOf(cell.getMetadata('larik'));
      if (target) {
        const indexes = here.get(key(target)) ?? [];
        indexes.push(index);
        here.set(key(target), indexes);
      }
    });
    here.forEach((indexes, name) => found.set(name, [...(found.get(name) ?? []), { panel, indexes }]));
  }
  return found;
}

/** A lookup, over the open notebooks as they are now, of the cells each prompt touched. */
export function touchedCells(tracker: INotebookTracker): (target: IProvenance) => ITouched[] {
  const found = touchedByPrompt(tracker);
  return target => found.get(key(target)) ?? [];
}

/** Make `indexes` the selection of `notebook` (the first one active) and scroll to it. */
function selectCells(notebook: Notebook, indexes: number[]): void {
  notebook.mode = 'command';
  notebook.activeCellIndex = indexes[0];
  notebook.deselectAll();
  for (const index of indexes) {
    notebook.select(notebook.widgets[index]);
  }
  void notebook.scrollToItem(indexes[0], 'center');
}

/**
 * Select the cells `target` touched in the first open notebook that has any (the current one
 * first) and bring that notebook to the front; returns that notebook's selection, or null.
 */
export function jumpToCells(
  tracker: INotebookTracker,
  activate: (panel: NotebookPanel) => void,
  target: IProvenance
): ITouched | null {
  const [first] = touchedCells(tracker)(target);
  if (!first) {
    return null;
  }
  activate(first.panel);
  selectCells(first.panel.content, first.indexes);
  return first;
}

/** Ask every fork tree shown in the page to select `target`'s row. */
export function showInTrees(target: IProvenance): void {
  window.dispatchEvent(new CustomEvent(SHOW_PROMPT_EVENT, { detail: target }));
}
