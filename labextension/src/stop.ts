/**
 * The in-cell Stop control also interrupts the kernel, as the toolbar's interrupt button does.
 *
 * ipykernel reads a widget's comm message only when its main thread is free, so a click on Stop
 * while the agent's code runs synchronously (a busy loop in the `python` tool or a cell
 * `notebook_run` runs) would arrive after that code ends. The control (an anywidget) dispatches
 * a bubbling `larik-stop` event from its element; this finds the notebook holding it and
 * interrupts that notebook's kernel, which the kernel treats as Stop (the code stops, the turn
 * ends). The comm message is still sent: front ends without this extension rely on it.
 */
import { INotebookTracker } from '@jupyterlab/notebook';

/** The DOM event the Stop control dispatches (bubbling) when it is clicked. */
export const STOP_EVENT = 'larik-stop';

/** Interrupt the kernel of the notebook a Stop control belongs to, whenever one is clicked. */
export function interruptOnStop(tracker: INotebookTracker): void {
  document.addEventListener(STOP_EVENT, event => {
    const target = event.target;
    if (!(target instanceof Node)) {
      return;
    }
    const panel = tracker.find(widget => widget.node.contains(target));
    void panel?.sessionContext.session?.kernel?.interrupt().catch(error => {
      console.warn('larik-jupyter: could not interrupt the kernel for Stop', error);
    });
  });
}
