/**
 * Approval cards answered in the page where no comm reaches the kernel (jupyter-server-documents).
 *
 * There the server runs the cells and no widget of the kernel renders, so a turn that asks
 * publishes its ask through larik's server extension. Each open notebook asks the server for
 * the asks of the kernels running it, shows each as a card over the notebook (the in-cell
 * card's question, detail and buttons), and posts the answer. A card goes once its ask is
 * answered, in this page or another, or withdrawn (the turn ended). On a server without
 * jupyter-server-documents the first answer says so and the page stops asking.
 */
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import * as api from './api';
import { ApprovalAnswer } from './rest';

/** How often an open notebook asks for its pending approvals, in ms. */
const EVERY = 1000;

type Decision = ApprovalAnswer['decision'];

// Asks this page answered: a listing sent before the answer landed does not show them again.
const answered = new Set<string>();

/** The buttons of a card, as the in-cell card labels them (a `keep` ask: Keep or Roll back). */
function buttons(ask: api.PageApproval): [string, Decision, string][] {
  if (ask.ask === 'keep') {
    return [
      ['Keep', 'allow', 'jp-mod-accept'],
      ['Roll back', 'deny', 'jp-mod-warn']
    ];
  }
  return [
    ['Allow once', 'allow', 'jp-mod-accept'],
    ['Always allow', 'always', 'jp-mod-reject'],
    ['Deny', 'deny', 'jp-mod-warn']
  ];
}

/** The card of `ask`; its buttons post the answer, then the card goes. */
function card(ask: api.PageApproval): HTMLElement {
  const node = document.createElement('div');
  node.className = 'larik-approval larik-page-approval';
  node.dataset.approval = ask.id;
  const question = document.createElement('b');
  question.textContent = ask.question;
  const detail = document.createElement('div');
  detail.innerHTML = ask.detail_html; // the server's rendering of escaped text (`textdiff.detail_html`)
  const row = document.createElement('div');
  row.className = 'larik-page-approval-buttons';
  const reason = document.createElement('input');
  reason.placeholder = 'optional reason for the model (deny)';
  const error = document.createElement('div');
  error.className = 'larik-page-approval-error';
  const controls: (HTMLButtonElement | HTMLInputElement)[] = [reason];
  for (const [label, decision, style] of buttons(ask)) {
    const button = document.createElement('button');
    button.className = `jp-Button jp-mod-styled ${style}`;
    button.textContent = label;
    button.onclick = async () => {
      controls.forEach(control => (control.disabled = true));
      const message = decision === 'deny' ? reason.value.trim() : '';
      try {
        await api.answerApproval(ask.id, { decision, message });
        answered.add(ask.id);
        node.remove();
      } catch (failure) {
        error.textContent = (failure as Error).message;
      }
    };
    controls.unshift(button);
    row.appendChild(button);
  }
  if (ask.ask !== 'keep') {
    row.appendChild(reason);
  }
  node.append(question, detail, row, error);
  return node;
}

/** Keep `panel`'s cards equal to the pending asks of its kernels until it closes; false when
 * the server says no turn asks the page here. */
async function follow(panel: NotebookPanel): Promise<boolean> {
  await panel.context.ready;
  const area = document.createElement('div');
  area.className = 'larik-page-approvals';
  panel.node.appendChild(area);
  while (!panel.isDisposed) {
    let pending: api.PageApprovals;
    try {
      pending = await api.pageApprovals(panel.context.localPath);
    } catch (failure) {
      // A server without larik's extension has no such endpoint; another failure (the
      // server restarting) is asked again.
      const missing = failure instanceof api.LarikApiError && failure.status === 404;
      pending = { live: !missing, approvals: [] };
    }
    if (!pending.live) {
      area.remove();
      return false;
    }
    const ids = new Set(pending.approvals.map(ask => ask.id));
    for (const shown of Array.from(area.children) as HTMLElement[]) {
      if (!ids.has(shown.dataset.approval ?? '')) {
        shown.remove();
      }
    }
    const shownIds = new Set(Array.from(area.children, shown => (shown as HTMLElement).dataset.approval));
    for (const ask of pending.approvals) {
      if (!shownIds.has(ask.id) && !answered.has(ask.id)) {
        area.appendChild(card(ask));
      }
    }
    await new Promise(resolve => setTimeout(resolve, EVERY));
  }
  return true;
}

/** Show the approvals of every open notebook's turns as cards in the page. */
export function answerApprovalsInPage(tracker: INotebookTracker): void {
  let live = true;
  const start = (panel: NotebookPanel) => {
    if (live) {
      void follow(panel).then(still => (live = live && still));
    }
  };
  tracker.forEach(start);
  tracker.widgetAdded.connect((_, panel) => start(panel));
}
