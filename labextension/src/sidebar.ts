/**
 * The "Larik sessions" sidebar: fork tree, prompt search, transcript and undoable turns.
 */
import { CommandRegistry } from '@lumino/commands';
import { Poll } from '@lumino/polling';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import * as api from './api';
import { CommandIDs } from './commands';
import { IProvenance, ITouched } from './provenance';
import { diffOrText, element, TranscriptRenderer, unfoundCount } from './transcript';

const PAGE = 100;
const POLL_MS = 5000;

function shortTime(time: string): string {
  const date = new Date(time);
  return isNaN(date.getTime()) ? time : date.toLocaleString();
}

/** Where a branch came from, by prompt number (as `fork_label` in session/branch.py). */
function forkLabel(node: api.TreeNode, parent: string | null): string {
  if (!node.fork_of) {
    return '';
  }
  const where = node.fork_prompt ? `after prompt ${node.fork_prompt}` : 'at the start';
  // Listed beside its source (it branched inside the prompts its source copied): named.
  const source = node.parent_deleted || node.fork_of !== parent ? ` of ${node.fork_of}` : '';
  return `branched ${where}${source}${node.parent_deleted ? ', which was deleted' : ''}`;
}

/** The line of `text` where `query` (lower case) first occurs, split around the match. */
function matchedLine(text: string, query: string): [string, string, string] | null {
  for (const line of text.split('\n')) {
    const at = line.toLowerCase().indexOf(query);
    if (at >= 0) {
      return [line.slice(0, at), line.slice(at, at + query.length), line.slice(at + query.length)];
    }
  }
  return null;
}

/** The sidebar widget. `cwd` is relative to the server root ('' is the root). */
export class SessionsPanel extends Widget {
  private _cwd = '';
  private _list: api.SessionList | null = null;
  private _listKey = '';
  private _selected: string | null = null;
  private _loaded = 0;
  private readonly _search: HTMLInputElement;
  private readonly _cwdLabel: HTMLElement;
  private readonly _tree: HTMLElement;
  private readonly _detail: HTMLElement;
  private readonly _error: HTMLElement;
  private readonly _renderer: TranscriptRenderer;
  private readonly _poll: Poll;
  /** The prompt "Open prompt in Larik sidebar" asked for: scrolled to and highlighted. */
  private _focus: IProvenance | null = null;
  /** Where the open notebooks have cells each prompt touched (set by the plugin). */
  touchedCells: (() => (target: IProvenance) => ITouched[]) | null = null;

  constructor(
    private readonly commands: CommandRegistry,
    rendermime: IRenderMimeRegistry
  ) {
    super();
    this.id = 'larik-sessions';
    this.addClass('jp-larik-sessions');
    this.title.caption = 'Larik sessions';
    this._renderer = new TranscriptRenderer(rendermime);

    const header = element('div', 'jp-larik-header');
    header.appendChild(element('h2', 'jp-larik-title', 'Larik sessions'));
    this._cwdLabel = element('div', 'jp-larik-cwd');
    header.appendChild(this._cwdLabel);
    this._search = element('input', 'jp-larik-search jp-mod-styled');
    this._search.type = 'search';
    this._search.placeholder = 'Search prompts';
    this._search.addEventListener('input', () => this.renderTree());
    header.appendChild(this._search);
    this._error = element('div', 'jp-larik-error');
    this._tree = element('ul', 'jp-larik-tree');
    this._detail = element('div', 'jp-larik-detail');
    this.node.append(header, this._error, this._tree, this._detail);

    this._poll = new Poll({
      factory: () => this.refresh(),
      frequency: { interval: POLL_MS, backoff: true, max: 60 * 1000 },
      standby: 'when-hidden',
      name: 'larik-jupyter:sessions'
    });
  }

  /** The selected session id, if any. */
  get selected(): string | null {
    return this._selected;
  }

  get cwd(): string {
    return this._cwd;
  }

  /** Show the sessions of another directory (relative to the server root). */
  set cwd(value: string) {
    if (value === this._cwd) {
      return;
    }
    this._cwd = value;
    this._selected = null;
    this._listKey = '';
    this._detail.replaceChildren();
    void this._poll.refresh();
  }

  /** The listing entry of a session of the current directory. */
  session(id: string): api.SessionOut | undefined {
    return this._list?.sessions.find(s => s.id === id);
  }

  /** Opening the sidebar shows the current state at once instead of at the next tick. */
  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this._poll.refresh();
  }

  dispose(): void {
    this._poll.dispose();
    super.dispose();
  }

  /** Reload the listing; re-render only when something changed. */
  async refresh(): Promise<void> {
    let list: api.SessionList;
    try {
      list = await api.listSessions(this._cwd);
    } catch (error) {
      this._error.textContent = String((error as Error).message ?? error);
      return;
    }
    this._error.textContent = '';
    const key = JSON.stringify(list);
    if (key === this._listKey) {
      return;
    }
    const previous = this._selected ? this.session(this._selected) : undefined;
    this._list = list;
    this._listKey = key;
    this._cwdLabel.textContent = '/' + list.cwd;
    this.renderTree();
    if (this._selected) {
      const now = this.session(this._selected);
      if (!now) {
        this._selected = null;
        this._detail.replaceChildren();
      } else if (!previous || previous.size !== now.size) {
        await this.showDetail();
      }
    }
  }

  /** Select a session and show its transcript and turns. */
  async select(id: string): Promise<void> {
    if (this._focus?.session !== id) {
      this._focus = null;
    }
    this._selected = id;
    this.renderTree();
    await this.showDetail();
  }

  /**
   * Show the transcript of session `session` of directory `cwd` (relative to the server root)
   * scrolled to its prompt `prompt`, highlighted; returns why not when the directory has no
   * such session.
   */
  async openPrompt(cwd: string, session: string, prompt: number): Promise<string | null> {
    this.cwd = cwd;
    await this.refresh();
    if (!this.session(session)) {
      return `Session ${session} is not among the sessions of /${cwd}: it was deleted, or its kernel ran in another directory.`;
    }
    this._focus = { session, prompt };
    await this.select(session);
    return null;
  }

  /** Offer "Jump to cells" again on each prompt shown, for the notebooks open now. */
  updateJumps(): void {
    const id = this._selected;
    if (!id) {
      return;
    }
    const lookup = this.touchedCells?.();
    this._detail.querySelectorAll<HTMLElement>('.jp-larik-prompt[data-prompt]').forEach(node => {
      this.offerJump(node, id, lookup);
    });
  }

  private offerJump(
    node: HTMLElement,
    session: string,
    lookup: ((target: IProvenance) => ITouched[]) | undefined
  ): void {
    node.querySelector(':scope > .jp-larik-jump')?.remove();
    const target = { session, prompt: Number(node.dataset.prompt) };
    const touched = lookup?.(target) ?? [];
    if (touched.length === 0) {
      return;
    }
    const row = element('div', 'jp-larik-jump');
    const button = element('button', 'jp-larik-action jp-mod-styled', 'Jump to cells');
    button.dataset.command = CommandIDs.jumpToCells;
    button.addEventListener('click', () => void this.commands.execute(CommandIDs.jumpToCells, { ...target }));
    const where = touched
      .map(t => `${t.indexes.length} cell${t.indexes.length === 1 ? '' : 's'} in ${t.panel.context.path}`)
      .join(', ');
    button.title = `Select the cells prompt ${target.prompt} changed (${where})`;
    row.append(button, element('span', 'jp-larik-meta', where));
    node.prepend(row);
  }

  /** Scroll to and highlight the focused prompt, loading pages until it is shown. */
  private async reveal(id: string, into: HTMLElement): Promise<void> {
    const focus = this._focus;
    if (!focus || focus.session !== id) {
      return;
    }
    const selector = `.jp-larik-prompt[data-prompt="${focus.prompt}"]`;
    let node = into.querySelector<HTMLElement>(selector);
    while (!node && into.querySelector('.jp-larik-more') && this._selected === id) {
      await this.loadMore(id, into);
      node = into.querySelector<HTMLElement>(selector);
    }
    if (!node) {
      this._error.textContent = `Session ${id} has no prompt ${focus.prompt}.`;
      return;
    }
    into.querySelectorAll('.jp-larik-focus').forEach(other => other.classList.remove('jp-larik-focus'));
    node.classList.add('jp-larik-focus');
    node.scrollIntoView({ block: 'start' });
  }

  /** Every session of the tree by id. */
  private treeNodes(): Map<string, api.TreeNode> {
    const nodes = new Map<string, api.TreeNode>();
    const visit = (node: api.TreeNode) => {
      nodes.set(node.id, node);
      node.children.forEach(visit);
    };
    this._list?.tree.forEach(visit);
    return nodes;
  }

  private renderTree(): void {
    this._tree.replaceChildren();
    if (!this._list) {
      return;
    }
    if (this._list.sessions.length === 0) {
      this._tree.appendChild(element('li', 'jp-larik-empty', 'No sessions in this directory yet.'));
      return;
    }
    const query = this._search.value.trim().toLowerCase();
    if (query) {
      const nodes = this.treeNodes();
      // Any line of a prompt matches, not only the first one the rows show.
      const whole = (p: api.PromptInfo) => p.text || p.first_line;
      const hits = this._list.sessions.filter(
        s =>
          s.first_prompt.toLowerCase().includes(query) ||
          (nodes.get(s.id)?.prompts ?? []).some(p => whole(p).toLowerCase().includes(query))
      );
      for (const info of hits) {
        const node: api.TreeNode = nodes.get(info.id) ?? {
          id: info.id,
          fork_of: info.fork_of,
          fork_at: info.fork_at,
          fork_prompt: info.fork_prompt,
          parent_deleted: false,
          prompts: [],
          interrupted: null,
          compactions: [],
          error: info.error,
          children: []
        };
        const item = this.renderNode({ ...node, children: [] }, node.fork_of ?? null);
        // Which prompts matched: the line holding the match, the match highlighted.
        node.prompts.forEach((prompt, index) => {
          const found = matchedLine(whole(prompt), query);
          if (!found) {
            return;
          }
          const line = element('div', 'jp-larik-match', `prompt ${index + 1}: `);
          line.append(found[0], element('mark', 'jp-larik-mark', found[1]), found[2]);
          item.appendChild(line);
        });
        this._tree.appendChild(item);
      }
      if (hits.length === 0) {
        this._tree.appendChild(element('li', 'jp-larik-empty', 'No prompt matches.'));
      }
      return;
    }
    for (const node of this._list.tree) {
      this._tree.appendChild(this.renderNode(node, null));
    }
  }

  private renderNode(node: api.TreeNode, parent: string | null): HTMLElement {
    const info = this.session(node.id);
    const item = element('li', 'jp-larik-node');
    item.dataset.sessionId = node.id;
    const row = element('div', 'jp-larik-row');
    if (node.id === this._selected) {
      row.classList.add('jp-mod-selected');
    }
    // A branch is named by its own first prompt; the prompts it copied belong to its source.
    const shared = node.fork_prompt ?? 0;
    const own = node.prompts.slice(shared);
    if (own.length) {
      row.appendChild(element('span', 'jp-larik-prompt-text', own[0].first_line));
    } else {
      row.appendChild(element('span', 'jp-larik-prompt-text jp-larik-no-prompt', 'No prompt yet'));
    }
    const parts = [node.id];
    if (own.length) {
      parts.push(own.length === 1 ? '1 prompt' : `${own.length} prompts`);
    }
    const branch = forkLabel(node, parent);
    if (branch) {
      parts.push(branch);
    }
    row.appendChild(element('span', 'jp-larik-meta', parts.join(' · ')));
    if (info?.model) {
      row.appendChild(element('span', 'jp-larik-model', ` · ${info.model}`));
    }
    if (info?.cost_label) {
      row.appendChild(element('span', 'jp-larik-cost', ` · ${info.cost_label}`));
    }
    if (info?.held) {
      const held = element('span', 'jp-larik-held', 'open in a kernel');
      held.title = 'A live kernel has this session open; opening it here continues on a new branch of it.';
      row.appendChild(held);
    }
    row.title = [
      own[0]?.first_line,
      info ? `started ${shortTime(info.time)}` : node.id,
      info?.updated ? `last active ${shortTime(info.updated)}` : ''
    ]
      .filter(Boolean)
      .join('\n');
    if (info?.error) {
      row.appendChild(element('span', 'jp-larik-error', 'damaged: ' + info.error));
    }
    row.addEventListener('click', () => void this.select(node.id));
    item.appendChild(row);
    if (node.children.length) {
      const children = element('ul', 'jp-larik-children');
      for (const child of node.children) {
        children.appendChild(this.renderNode(child, node.id));
      }
      item.appendChild(children);
    }
    return item;
  }

  private actionButton(label: string, command: string, id: string): HTMLButtonElement {
    const button = element('button', 'jp-larik-action jp-mod-styled', label);
    button.dataset.command = command;
    button.addEventListener('click', () => void this.commands.execute(command, { id }));
    return button;
  }

  private async showDetail(): Promise<void> {
    const id = this._selected;
    if (!id) {
      return;
    }
    const detail = element('div', 'jp-larik-detail-body');
    const actions = element('div', 'jp-larik-actions');
    actions.append(
      this.actionButton('Open in notebook', CommandIDs.openInNotebook, id),
      this.actionButton('Open as notebook', CommandIDs.openAsNotebook, id),
      this.actionButton('Export', CommandIDs.exportSession, id),
      this.actionButton('Delete', CommandIDs.deleteSession, id)
    );
    if (this.session(id)?.model?.startsWith('mcp:')) {
      // An outside agent's session: the notebook undoes its calls without taking it over.
      const undo = this.actionButton('Undo its last call', CommandIDs.undoInNotebook, id);
      undo.title = 'Put a cell that undoes this client\'s last call (%larik /undo --session) into the notebook';
      actions.appendChild(undo);
    }
    detail.appendChild(actions);
    detail.appendChild(element('h3', 'jp-larik-subtitle', 'Undoable turns'));
    const turns = element('div', 'jp-larik-turns');
    detail.appendChild(turns);
    detail.appendChild(element('h3', 'jp-larik-subtitle', 'Transcript'));
    const transcript = element('div', 'jp-larik-transcript');
    detail.appendChild(transcript);
    this._detail.replaceChildren(detail);
    this._loaded = 0;
    this._renderer.reset();
    try {
      await Promise.all([this.renderTurns(id, turns), this.loadMore(id, transcript)]);
      await this.reveal(id, transcript);
    } catch (error) {
      this._error.textContent = String((error as Error).message ?? error);
    }
  }

  private async renderTurns(id: string, into: HTMLElement): Promise<void> {
    const result = await api.checkpoints(this._cwd, id);
    if (result.turns.length === 0) {
      into.appendChild(element('div', 'jp-larik-empty', result.empty));
      return;
    }
    for (const turn of result.turns) {
      // The session's undo list, as the undo panel, `/undo` and MCP's `undo_list` read it.
      const details = element('details', 'jp-larik-turn');
      details.dataset.turn = String(turn.turn);
      details.dataset.state = turn.state;
      const names = turn.files.map(f => f.name || f.path).concat(turn.variables.map(v => `variable ${v}`));
      const label = turn.label || (turn.prompt ? `prompt ${turn.prompt}` : `turn ${turn.turn}`);
      const state = turn.state === 'undoable' ? '' : ` (${turn.state})`;
      details.appendChild(element('summary', '', `${label.charAt(0).toUpperCase()}${label.slice(1)}: ${names.join(', ')}${state}`));
      if (turn.note) {
        details.appendChild(element('div', 'jp-larik-turn-note', turn.note));
      }
      for (const file of turn.files) {
        const name = file.name || file.path;
        details.appendChild(element('div', 'jp-larik-file', file.existed ? name : `${name} (new)`));
        details.appendChild(diffOrText(file.diff, file.diff_html));
      }
      into.appendChild(details);
    }
  }

  private async loadMore(id: string, into: HTMLElement): Promise<void> {
    const page = await api.transcriptPage(this._cwd, id, this._loaded, PAGE);
    if (this._selected !== id) {
      return;
    }
    into.querySelector('.jp-larik-more')?.remove();
    const lookup = this.touchedCells?.();
    // Numbers found in no output of their turn, as the server traced them (docs/format.md).
    const unfound = new Map<number, Map<number, api.UnfoundNumber[]>>();
    for (const item of page.unfound ?? []) {
      unfound.set(item.entry, (unfound.get(item.entry) ?? new Map()).set(item.block, item.numbers));
    }
    const counts = new Map((page.unfound_counts ?? []).map(count => [count.entry, count.text]));
    // What each prompt's requests sent and withheld, from the session's egress ledger.
    const egress = new Map((page.egress ?? []).map(turn => [turn.prompt, turn]));
    for (const [i, entry] of page.entries.entries()) {
      const node = await this._renderer.entry(entry, unfound.get(page.offset + i));
      if (node) {
        if (node.dataset.prompt) {
          this.offerJump(node, id, lookup);
          const sent = egress.get(Number(node.dataset.prompt));
          if (sent) {
            node.appendChild(egressLine(sent));
          }
        }
        into.appendChild(node);
      }
      const count = counts.get(page.offset + i);
      if (count) {
        into.appendChild(unfoundCount(count));
      }
    }
    this._loaded = page.offset + page.entries.length;
    if (this._loaded < page.total) {
      const more = element('button', 'jp-larik-more jp-mod-styled', `Load more (${page.total - this._loaded} left)`);
      more.addEventListener('click', () => void this.loadMore(id, into));
      into.appendChild(more);
    }
  }
}

/** A prompt's egress line: what its requests sent, in the quiet colour, and what they
 * withheld (the server's text after the first ` · `) marked as a warning. */
function egressLine(sent: api.EgressTurn): HTMLElement {
  const cut = sent.text.indexOf(' · ');
  if (!sent.withheld.length || cut < 0) {
    return element('div', 'jp-larik-egress', sent.text);
  }
  const line = element('div', 'jp-larik-egress', sent.text.slice(0, cut + 3));
  line.appendChild(element('span', 'jp-larik-egress-withheld', sent.text.slice(cut + 3)));
  return line;
}
