/**
 * A status bar item that says what a Larik turn in the current notebook is doing. While a turn
 * waits for an approval the kernel reports "Idle" (it answered the page's widget messages), so
 * the kernel's own status cannot tell the user the turn waits for them; this item does.
 */
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IStatusBar } from '@jupyterlab/statusbar';
import { Widget } from '@lumino/widgets';

/** What `node` (a notebook) shows of a Larik turn: an unanswered approval card, a turn running. */
export function turnState(node: HTMLElement): 'waiting' | 'running' | null {
  const buttons = node.querySelectorAll<HTMLButtonElement>('.larik-approval button');
  if (Array.from(buttons).some(button => !button.disabled)) {
    return 'waiting';
  }
  const stops = node.querySelectorAll<HTMLButtonElement>('button.larik-stop');
  return Array.from(stops).some(stop => !stop.disabled && stop.style.display !== 'none') ? 'running' : null;
}

const TEXT = {
  waiting: 'Larik: waiting for your approval',
  running: 'Larik: turn running'
};

/** Add the item to the status bar; it follows the current notebook. */
export function addTurnStatus(tracker: INotebookTracker, statusBar: IStatusBar): void {
  const item = new Widget();
  item.addClass('jp-larik-turn-status');
  let watched: NotebookPanel | null = null;
  let pending = 0;
  const update = () => {
    pending = 0;
    const state = watched ? turnState(watched.node) : null;
    item.node.textContent = state ? TEXT[state] : '';
    item.node.dataset.state = state ?? '';
    item.node.title = state === 'waiting' ? 'A Larik turn in this notebook asks before a tool call: answer its card' : '';
    item.setHidden(state === null);
  };
  // Transcripts stream many small changes: one check per frame at most.
  const observer = new MutationObserver(() => {
    if (!pending) {
      pending = requestAnimationFrame(update);
    }
  });
  const watch = (panel: NotebookPanel | null) => {
    observer.disconnect();
    watched = panel;
    if (panel) {
      observer.observe(panel.node, { childList: true, subtree: true, attributes: true, attributeFilter: ['disabled', 'style'] });
    }
    update();
  };
  tracker.currentChanged.connect((_, panel) => watch(panel));
  watch(tracker.currentWidget);
  statusBar.registerStatusItem('larik-jupyter:turn-status', {
    item,
    align: 'left',
    rank: 2
  });
}
