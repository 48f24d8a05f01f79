/**
 * "Fix with Larik": a button on the error output of a code cell whose kernel has larik_jupyter
 * loaded; it inserts a `%%larik` cell below asking to fix that cell's error, and runs it.
 */
import { Cell, CodeCell } from '@jupyterlab/cells';
import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';

/** The `%%larik` cell that asks to fix `cellId`'s error. */
export function fixPrompt(cellId: string, ename: string, evalue: string): string {
  return (
    '%%larik\n' +
    `Fix the error in cell ${cellId} of this notebook (${ename}: ${evalue}). ` +
    'Read it with notebook_read, correct it with notebook_edit and check it with notebook_run.'
  );
}

function errorOf(cell: Cell): { ename: string; evalue: string } | null {
  if (!(cell instanceof CodeCell)) {
    return null;
  }
  const outputs = cell.model.outputs;
  for (let i = 0; i < outputs.length; i++) {
    const output = outputs.get(i).toJSON();
    if (output.output_type === 'error') {
      return { ename: String(output.ename), evalue: String(output.evalue) };
    }
  }
  return null;
}

export function addFixButton(panel: NotebookPanel, cell: Cell): void {
  if (!(cell instanceof CodeCell) || !errorOf(cell) || cell.node.querySelector('.jp-larik-fix')) {
    return;
  }
  const button = document.createElement('button');
  button.className = 'jp-larik-fix jp-mod-styled';
  button.textContent = 'Fix with Larik';
  button.title = 'Insert a %%larik cell below that asks the agent to fix this error, and run it';
  button.onclick = () => void fix(panel, cell, button);
  cell.node.appendChild(button);
  const outputsChanged = () => {
    if (!errorOf(cell)) {
      button.remove();
      cell.model.outputs.changed.disconnect(outputsChanged);
    }
  };
  cell.model.outputs.changed.connect(outputsChanged);
}

async function fix(panel: NotebookPanel, cell: CodeCell, button: HTMLElement): Promise<void> {
  const error = errorOf(cell);
  const model = panel.content.model?.sharedModel;
  if (!error || !model) {
    return;
  }
  const index = model.cells.findIndex(c => c.getId() === cell.model.id);
  model.insertCell(index + 1, {
    cell_type: 'code',
    source: fixPrompt(cell.model.id, error.ename, error.evalue)
  });
  button.remove();
  panel.content.activeCellIndex = index + 1;
  panel.content.deselectAll();
  await NotebookActions.run(panel.content, panel.sessionContext);
}
