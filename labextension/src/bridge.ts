/**
 * The notebook bridge: one `larik.bridge` comm between each open notebook panel and its kernel
 * (when the kernel has larik_jupyter loaded). The kernel's requests are applied to the panel's
 * live document model, never to the file, and each gets a reply with the resulting cell ids or
 * a precise error. See larik_jupyter/frontends/notebook/bridge.py for the kernel's end.
 */
import type { ISharedCell, ISharedCodeCell } from '@jupyter/ydoc';
import { Cell, ICodeCellModel } from '@jupyterlab/cells';
import { PageConfig } from '@jupyterlab/coreutils';
import type { ICell, IOutput } from '@jupyterlab/nbformat';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';

import { IProvenance, followMarks, provenanceOf } from './provenance';
import { Json, JsonObject } from './json';
import {
  Bye,
  ChangedReply,
  ErrorReply,
  FIELDS,
  Hello,
  PageMessage,
  RefusalCode,
  RefusedReply,
  Replies,
  REPLY_TYPES,
  Request
} from './protocol';

export const TARGET = 'larik.bridge';

/** What the handler of `Op` answers: its declared reply without the envelope the bridge adds. */
type Answer<Op extends Request['op']> = Omit<Replies[Op], 'type' | 'id'>;

/** What a change answers (`ChangedReply` without its envelope). */
type Changed = Omit<ChangedReply, 'type' | 'id'>;

/** A request the document cannot take; `code` tells the kernel why (`NOT_OPEN`: use the file). */
class Refusal extends Error {
  constructor(
    message: string,
    readonly code: RefusalCode = RefusalCode.REFUSED,
    readonly data: Omit<RefusedReply, 'type' | 'id' | 'code' | 'error'> = {}
  ) {
    super(message);
  }
}

/** An nbformat value of JupyterLab's (a cell, an output) or a message, as the protocol's JSON. */
function asJson(value: object): JsonObject {
  return value as JsonObject;
}

/** JSON from the kernel as the nbformat type it was sent as (a cell, an output). */
function fromJson<T extends object>(value: JsonObject): T {
  return value as object as T;
}

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCode(cell: ISharedCell): cell is ISharedCodeCell {
  return cell.cell_type === 'code';
}

/**
 * The server's root directory, which the kernel needs to find the notebook a panel shows:
 * JupyterLab's page says `serverRoot`, Notebook 7's only `rootUri` (a file: URI).
 */
function serverRoot(): string {
  const root = PageConfig.getOption('serverRoot');
  if (root) {
    return root;
  }
  const uri = PageConfig.getOption('rootUri');
  return uri.startsWith('file://') ? decodeURIComponent(new URL(uri).pathname) : '';
}

/** JSON with sorted keys: the same output compares equal whoever built it. */
function canonical(value: Json | object): string {
  return JSON.stringify(value, (_key, inner) =>
    inner && typeof inner === 'object' && !Array.isArray(inner)
      ? Object.fromEntries(Object.keys(inner).sort().map(key => [key, inner[key]]))
      : inner
  );
}

/**
 * A 64-bit fingerprint of a cell as the document holds it (two 32-bit FNV-style hashes of its
 * canonical JSON). The kernel keeps the cells it has read with their fingerprints and sends the
 * fingerprint back with an edit, so one request both checks and edits a cell it read earlier.
 */
function fingerprint(cell: Json | object): string {
  const text = canonical(cell);
  let h1 = 0x811c9dc5;
  let h2 = 0x9747b28c ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ code, 0x01000193);
    h2 = Math.imul(h2 ^ code, 0x5bd1e995);
    h2 ^= h2 >>> 13;
  }
  return (h1 >>> 0).toString(16).padStart(8, '0') + (h2 >>> 0).toString(16).padStart(8, '0');
}

/** Cells as the reply carries them: their JSON and fingerprints, for the kernel's copy. */
function stateOf(cells: ISharedCell[]): { cells: JsonObject[]; hashes: { [id: string]: string } } {
  const json = cells.map(cell => asJson(cell.toJSON()));
  const hashes = Object.fromEntries(json.map((cell, i) => [cells[i].getId(), fingerprint(cell)]));
  return { cells: json, hashes };
}

function sourceOf(cell: JsonObject): string {
  const source = cell.source ?? '';
  return Array.isArray(source) ? source.join('') : String(source);
}

/** The requests that change the document (what a page's own copy follows). */
const CHANGES = new Set<string>(['insert', 'replace', 'patch', 'delete', 'set_outputs', 'set_metadata', 'restore']);

/** How many applied requests are remembered to skip a second panel's copy of one. */
const HANDLED_KEPT = 256;

const PAGE_KEY = 'larik-bridge-page';

/**
 * This page's id, named in each request the kernel addresses to it (`to`): several pages may
 * show one notebook (collaborators, two tabs), and only the addressed one applies a request.
 * A reload of the tab keeps it (the kernel then knows the page it replaces); a new or
 * duplicated tab makes its own.
 */
function pageId(): string {
  const navigation = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming | undefined;
  const kept = navigation?.type === 'reload' ? sessionStorage.getItem(PAGE_KEY) : null;
  const id = kept || `page-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
  sessionStorage.setItem(PAGE_KEY, id);
  return id;
}

export class NotebookBridge {
  /** The comms of each panel (the panel's own and the one its kernel opened). */
  private comms = new Map<NotebookPanel, Set<Kernel.IComm>>();
  /** The comms this page opened (the kernel's own comm is shared by every page: never closed here). */
  private own = new WeakSet<Kernel.IComm>();
  /** This page's id (`Hello.page`, `Request.to`). */
  readonly page = pageId();
  /** The latest requests applied (`comm id:request id`), oldest first, at most `HANDLED_KEPT`. */
  private handled = new Set<string>();
  /** Cells whose changes come from the kernel right now (not the user's edits). */
  private applying = false;
  /** Called with the panel and a cell whose error output gets a "Fix with Larik" button. */
  onError: ((panel: NotebookPanel, cell: Cell) => void) | null = null;
  /** Called when the user clicks a cell's "edited by Larik" marker. */
  onMarkerClick: ((panel: NotebookPanel, target: IProvenance) => void) | null = null;

  constructor(private tracker: INotebookTracker) {
    tracker.forEach(panel => this.watch(panel));
    tracker.widgetAdded.connect((_, panel) => this.watch(panel));
    // A closing tab tells the kernel, whose requests then go to another page at once.
    window.addEventListener('pagehide', () => this.comms.forEach((_, panel) => this.bye(panel)));
    NotebookActions.executed.connect((_, { notebook, cell, success }) => {
      unmark(cell);
      const panel = this.find(p => p.content === notebook);
      if (!success && panel && this.connected(panel)) {
        this.onError?.(panel, cell);
      }
    });
  }

  /** Whether `panel`'s kernel is connected through the bridge. */
  connected(panel: NotebookPanel): boolean {
    return (this.comms.get(panel)?.size ?? 0) > 0;
  }

  private find(test: (panel: NotebookPanel) => boolean): NotebookPanel | null {
    let found: NotebookPanel | null = null;
    this.tracker.forEach(panel => {
      if (!found && test(panel)) {
        found = panel;
      }
    });
    return found;
  }

  private watch(panel: NotebookPanel): void {
    const context = panel.sessionContext;
    let restarting = false;
    const connect = () => {
      const kernel = context.session?.kernel;
      if (kernel && !panel.isDisposed) {
        this.connect(panel, kernel);
      }
    };
    context.kernelChanged.connect(connect);
    context.statusChanged.connect((_, status) => {
      if (status === 'restarting' || status === 'autorestarting') {
        restarting = true;
        this.comms.get(panel)?.clear();
      } else if (status === 'idle' && restarting) {
        // An extension loaded at startup (IPython config) has already opened its comm: ask.
        restarting = false;
        connect();
      }
    });
    panel.context.pathChanged.connect(() => this.sayHello(panel));
    // The markers come back with the page (from the `larik` metadata the cells were saved
    // with) and follow the edits another page applied (their metadata comes through the
    // shared document).
    followMarks(panel, (id, target) => this.markEdited(panel, id, target));
    panel.disposed.connect(() => {
      // Closing the notebook tells the kernel, whose edits of it then go to another page
      // showing it, or to the file.
      this.bye(panel);
      this.comms.get(panel)?.forEach(comm => {
        try {
          if (this.own.has(comm)) {
            comm.close();
          }
        } catch {
          // The kernel connection is already gone.
        }
      });
      this.comms.delete(panel);
    });
    void context.ready.then(connect);
  }

  private connect(panel: NotebookPanel, kernel: Kernel.IKernelConnection): void {
    // The kernel opens a comm when the extension loads (panels that were already open).
    kernel.registerCommTarget(TARGET, (comm: Kernel.IComm) => {
      this.attach(panel, comm);
      this.hello(panel, comm);
    });
    if (this.connected(panel)) {
      return;
    }
    // Panels opened (or reloaded) after the extension loaded open the comm themselves; a kernel
    // without the extension closes it at once.
    try {
      const comm = kernel.createComm(TARGET);
      this.own.add(comm);
      this.attach(panel, comm);
      void comm.open(this.helloData(panel));
    } catch {
      // The kernel went away meanwhile; its next connection tries again.
    }
  }

  private attach(panel: NotebookPanel, comm: Kernel.IComm): void {
    let comms = this.comms.get(panel);
    if (!comms) {
      comms = new Set();
      this.comms.set(panel, comms);
    }
    comms.add(comm);
    comm.onMsg = (msg: KernelMessage.ICommMsgMsg) => this.onMsg(comm, msg.content.data);
    comm.onClose = () => {
      this.comms.get(panel)?.delete(comm);
    };
  }

  private helloData(panel: NotebookPanel): JsonObject {
    // `client`: the kernel tells which page ran a `%larik` cell by its messages' `session`.
    const client = panel.sessionContext.session?.kernel?.clientId;
    const hello: Hello = { type: 'hello', path: panel.context.path, root: serverRoot(), page: this.page, client };
    return asJson(hello);
  }

  /** Tell the kernel this page no longer shows `panel`'s notebook. */
  private bye(panel: NotebookPanel): void {
    const bye: Bye = { type: 'bye', page: this.page };
    this.comms.get(panel)?.forEach(comm => {
      try {
        if (!comm.isDisposed) {
          void comm.send(asJson(bye));
        }
      } catch {
        // The kernel connection is already gone.
      }
    });
  }

  private hello(panel: NotebookPanel, comm: Kernel.IComm): void {
    if (!comm.isDisposed) {
      void comm.send(this.helloData(panel));
    }
  }

  private sayHello(panel: NotebookPanel): void {
    this.comms.get(panel)?.forEach(comm => this.hello(panel, comm));
  }

  private onMsg(comm: Kernel.IComm, data: Json | undefined): void {
    if (!isObject(data)) {
      return;
    }
    if (data.type === 'error') {
      // The kernel could not read a message of this page's: say so where a developer looks.
      console.warn(`larik: the kernel could not read a bridge message: ${data.error}`);
      return;
    }
    if (data.type !== 'request') {
      return;
    }
    const malformed = problemOf(data);
    if (malformed) {
      const error: ErrorReply = { type: 'error', code: RefusalCode.MALFORMED, error: malformed, id: validId(data.id) };
      if (!comm.isDisposed) {
        void comm.send(asJson(error));
      }
      return;
    }
    // `problemOf` checked it against the declared fields of its op.
    const request = data as object as Request;
    const mine = !request.to || request.to === this.page;
    if (!mine && !this.ownCopy(request)) {
      return; // addressed to another page showing this kernel's notebook
    }
    if (request.id && mine) {
      // Two panels on one kernel share the kernel's comm: apply each request once.
      const key = `${comm.commId}:${request.id}`;
      if (this.handled.has(key)) {
        return;
      }
      this.handled.add(key);
      if (this.handled.size > HANDLED_KEPT) {
        // Both panels' copies of a request arrive within moments of each other.
        this.handled.delete(this.handled.values().next().value as string);
      }
    }
    let reply: PageMessage;
    const id = request.id ?? 0;
    try {
      reply = { ...this.apply(request), type: REPLY_TYPES[request.op], id } as Replies[Request['op']];
    } catch (error) {
      const refusal = error instanceof Refusal ? error : null;
      const code = refusal?.code ?? RefusalCode.ERROR;
      reply = { type: 'refused', id, code, error: (error as Error).message, ...refusal?.data };
    }
    if (id && mine && !comm.isDisposed) {
      void comm.send(asJson(reply));
    }
  }

  /**
   * Whether this page also applies an edit addressed to another page, silently: without real-time
   * collaboration each page holds its own copy of the notebook, which follows the kernel's edits
   * as it did before requests were addressed; a shared (collaborative) document takes each
   * edit once, from the addressed page.
   */
  private ownCopy(request: Request): boolean {
    const panel = this.find(p => p.context.path === request.path);
    return !!panel && !panel.context.model.collaborative && CHANGES.has(request.op);
  }

  private apply(request: Request): Answer<Request['op']> {
    const panel = this.find(p => p.context.path === request.path);
    const model = panel?.content.model?.sharedModel;
    if (!panel || !model) {
      throw new Refusal(`${request.path} is not open in this browser`, RefusalCode.NOT_OPEN);
    }
    const doc = new OpenDocument(panel, model, request, this);
    this.applying = true;
    try {
      // Each op's handler; `Request` is a union discriminated by `op`, so `FIELDS` and the
      // declared models (larik_jupyter/bridge_protocol.py) decide which one runs.
      return (HANDLERS[request.op] as (doc: OpenDocument, request: Request) => Answer<Request['op']>)(doc, request);
    } finally {
      this.applying = false;
    }
  }

  /** Mark a cell the kernel changed ("edited by Larik"), unmarked when the user edits it. */
  markEdited(panel: NotebookPanel, id: string, larik: IProvenance): void {
    mark(panel, id, larik, () => this.applying, target => this.onMarkerClick?.(panel, target));
  }
}

type Model = NonNullable<NotebookPanel['content']['model']>['sharedModel'];

/** One request's view of the document it changes: where cells stand, and what the reply says. */
class OpenDocument {
  constructor(
    readonly panel: NotebookPanel,
    readonly model: Model,
    readonly request: Request,
    private bridge: NotebookBridge
  ) {}

  /** Every cell's id in order (where a changed cell stood, for undo), and its fingerprint. */
  order(): { order: string[]; order_hash: string } {
    const ids = this.model.cells.map(cell => cell.getId());
    return { order: ids, order_hash: fingerprint(ids) };
  }

  indexOf(id: string | undefined | null): number {
    const index = this.model.cells.findIndex(cell => cell.getId() === id);
    if (index < 0) {
      throw new Refusal(
        `the notebook has no cell ${JSON.stringify(id)} (it was deleted or its id changed); read the notebook again`,
        RefusalCode.MISSING_CELL,
        this.order()
      );
    }
    return index;
  }

  /** What the request changed, as the document holds it now (the kernel's copy follows it). */
  after(ids: string[]): Changed {
    return { cell_ids: ids, ...stateOf(this.model.cells.filter(cell => ids.includes(cell.getId()))), ...this.order() };
  }

  landed(id: string, metadata: JsonObject | null | undefined): Changed {
    const larik = provenanceOf(metadata?.larik);
    if (larik) {
      this.bridge.markEdited(this.panel, id, larik);
    }
    return this.after([id]);
  }

  /**
   * An edit worked out from what the kernel read earlier lands only if the cell is still what
   * it read (not typed in, run or reloaded since) and the cells still stand in the order it
   * read (undo puts cells back by it); else the kernel gets them as they are now.
   */
  checked(index: number | null): number {
    const expected = 'expect' in this.request ? this.request.expect : null;
    if (!expected) {
      return index ?? 0;
    }
    const cell = index === null ? null : this.model.cells[index];
    const now = this.order();
    const moved = expected.order != null && expected.order !== now.order_hash;
    const changed = cell && expected.hash != null && expected.hash !== fingerprint(cell.toJSON());
    if (moved || changed) {
      const id = 'cell_id' in this.request ? this.request.cell_id : '';
      const what = changed ? `cell ${id} changed` : 'cells were added, removed or moved';
      throw new Refusal(`${what} in the open notebook since the kernel read it`, RefusalCode.STALE, {
        ...stateOf(cell ? [cell] : []),
        ...now
      });
    }
    return index ?? 0;
  }

  has(id: string): boolean {
    return this.model.cells.some(cell => cell.getId() === id);
  }

  /** Whether the cells stand in `order` already, the restored ones as `cells` holds them and
   * none of `deleted` left: a restore that came twice. */
  restored(order: string[], cells: Map<string, JsonObject>, deleted: string[]): boolean {
    const now = this.model.cells;
    if (now.length !== order.length || deleted.some(id => this.has(id))) {
      return false;
    }
    return now.every((cell, i) => {
      const wanted = cells.get(order[i]);
      return cell.getId() === order[i] && (wanted === undefined || canonical(cell.toJSON()) === canonical(wanted));
    });
  }

  codeWidget(id: string): Cell | undefined {
    return this.panel.content.widgets.find(w => w.model.id === id);
  }

  /** A run the kernel reports left an error in `widget`: offer "Fix with Larik". */
  failed(widget: Cell): void {
    this.bridge.onError?.(this.panel, widget);
  }
}

/**
 * Each op's handler, answering the reply its request declares (`Replies`); each states its
 * return type, so tsc rejects a field its reply does not declare.
 */
type Handlers = { [Op in Request['op']]: (doc: OpenDocument, request: Extract<Request, { op: Op }>) => Answer<Op> };

const HANDLERS: Handlers = {
  get: (doc, request): Answer<'get'> => {
    // With `cell_ids`, only those cells (an edit needs one, not the whole document).
    const wanted = request.cell_ids;
    const model = doc.model;
    const chosen = wanted ? model.cells.filter(cell => wanted.includes(cell.getId())) : model.cells;
    const { cells, hashes } = stateOf(chosen);
    const head = { metadata: asJson(model.getMetadata()), nbformat: model.nbformat, nbformat_minor: model.nbformat_minor };
    return { notebook: { ...head, cells }, hashes, ...doc.order() };
  },

  insert: (doc, request): Answer<'insert'> => {
    const id = request.cell.id;
    if (typeof id === 'string' && doc.has(id)) {
      return doc.landed(id, metadataOf(request.cell)); // inserted already: the request came twice
    }
    doc.checked(null);
    const index = request.after ? doc.indexOf(request.after) + 1 : 0;
    const cell = doc.model.insertCell(index, fromJson<ICell>(request.cell));
    return doc.landed(cell.getId(), metadataOf(request.cell));
  },

  delete: (doc, request): Answer<'delete'> => {
    if (!doc.has(request.cell_id)) {
      return doc.after([]); // gone already (the request came twice, or a collaborator deleted it)
    }
    doc.model.deleteCell(doc.checked(doc.indexOf(request.cell_id)));
    return doc.after([]);
  },

  replace: (doc, request): Answer<'replace'> => {
    const model = doc.model;
    const cell = request.cell;
    const current = model.cells[doc.indexOf(request.cell_id)];
    if (
      current.cell_type === cell.cell_type &&
      current.getSource() === sourceOf(cell) &&
      canonical(current.getMetadata()) === canonical(metadataOf(cell) ?? {})
    ) {
      return doc.landed(current.getId(), metadataOf(cell)); // the cell is so already
    }
    const index = doc.checked(doc.indexOf(request.cell_id));
    const old = model.cells[index];
    if (old.cell_type !== cell.cell_type) {
      model.transact(() => {
        model.deleteCell(index);
        model.insertCell(index, fromJson<ICell>({ ...cell, id: old.getId() }));
      });
    } else {
      model.transact(() => {
        // The whole source set at once (compare-and-set: it differs, checked above), never
        // ranges deleted and inserted: an edit that meets itself cannot double the text.
        const changed = old.getSource() !== sourceOf(cell);
        old.setSource(sourceOf(cell));
        old.setMetadata(metadataOf(cell) ?? {});
        if (isCode(old) && changed) {
          old.setOutputs([]);
          old.execution_count = null;
        }
      });
    }
    return doc.landed(old.getId(), metadataOf(cell));
  },

  patch: (doc, request): Answer<'patch'> => {
    const larik = request.metadata?.larik;
    const call = larik && typeof larik === 'object' && !Array.isArray(larik) ? larik.tool_use_id : undefined;
    const current = doc.model.cells[doc.indexOf(request.cell_id)];
    if (
      typeof call === 'string' &&
      canonical(current.getMetadata('larik') ?? null) === canonical(larik ?? null) &&
      current.getSource().includes(request.new_string)
    ) {
      // The cell carries this very call's mark and its new text: the patch landed already
      // (the request came twice). A patch is not a whole source to compare, so its call's id,
      // which only the call's own edit writes, tells.
      return doc.landed(current.getId(), request.metadata);
    }
    const index = doc.checked(doc.indexOf(request.cell_id));
    const cell = doc.model.cells[index];
    const source = cell.getSource();
    const old = request.old_string;
    const count = old ? source.split(old).length - 1 : 0;
    if (count !== 1) {
      throw new Refusal(
        `old_string occurs ${count} times in cell ${request.cell_id} as it is now in the open notebook, not exactly once; read the cell again`,
        RefusalCode.NO_MATCH
      );
    }
    doc.model.transact(() => {
      cell.setSource(source.replace(old, () => request.new_string));
      if (request.metadata?.larik) {
        cell.setMetadata('larik', request.metadata.larik);
      }
      if (isCode(cell)) {
        cell.setOutputs([]);
        cell.execution_count = null;
      }
    });
    return doc.landed(cell.getId(), request.metadata);
  },

  set_outputs: (doc, request): Answer<'set_outputs'> => {
    const cell = doc.model.cells[doc.indexOf(request.cell_id)];
    if (!isCode(cell)) {
      throw new Refusal(`cell ${request.cell_id} is not a code cell`);
    }
    const outputs = (request.outputs ?? []).map(output => fromJson<IOutput>(output));
    const count = request.execution_count;
    const larik = request.metadata?.larik;
    if (
      canonical(cell.toJSON().outputs ?? []) === canonical(request.outputs ?? []) &&
      (count === undefined || cell.execution_count === count) &&
      (!larik || canonical(cell.getMetadata('larik') ?? null) === canonical(larik))
    ) {
      return doc.after([cell.getId()]); // set so already: changing them again would redraw them
    }
    // Cleared first, on its own: the output area merges a stream output that arrives next to
    // an earlier stream of the same name, which would double the streamed text.
    cell.clearOutputs(null);
    doc.model.transact(() => {
      cell.setOutputs(outputs);
      if (request.execution_count !== undefined) {
        cell.execution_count = request.execution_count;
      }
      if (request.metadata?.larik) {
        cell.setMetadata('larik', request.metadata.larik);
      }
    });
    const errored = outputs.some(o => o.output_type === 'error');
    if (request.execution_count !== undefined && errored) {
      const widget = doc.codeWidget(request.cell_id);
      if (widget) {
        doc.failed(widget);
      }
    }
    return request.metadata ? doc.landed(cell.getId(), request.metadata) : doc.after([cell.getId()]);
  },

  show_outputs: (doc, request): Answer<'show_outputs'> => {
    // A turn still running in this cell, shown again after this page (re)connected. The
    // cell's output model is changed, not the document's: the document's output changes reach
    // the output area as appends, which would reorder the outputs. Outputs that did not change
    // stay, so the live widget views are not rebuilt.
    const widget = doc.codeWidget(request.cell_id);
    if (!widget || widget.model.type !== 'code') {
      doc.indexOf(request.cell_id);
      throw new Refusal(`cell ${request.cell_id} is not a code cell`);
    }
    // As trusted as if this page had run the cell: a widget view renders only there.
    widget.model.trusted = true;
    const outputs = (widget.model as ICodeCellModel).outputs;
    const wanted = (request.outputs ?? []).map(output => fromJson<IOutput>(output));
    if (outputs.length !== wanted.length) {
      outputs.clear();
      wanted.forEach(output => outputs.add(output));
    } else {
      wanted.forEach((output, index) => {
        if (canonical(outputs.get(index).toJSON()) !== canonical(output)) {
          outputs.set(index, output);
        }
      });
    }
    return { cell_ids: [widget.model.id] };
  },

  focus: (doc, request): Answer<'focus'> => {
    // A cell the kernel points the user at (a /check problem): select it, show it.
    const index = doc.indexOf(request.cell_id);
    doc.panel.content.activeCellIndex = index;
    void doc.panel.content.scrollToItem(index, 'center');
    return { cell_ids: [doc.model.cells[index].getId()] };
  },

  set_metadata: (doc, request): Answer<'set_metadata'> => {
    const cell = doc.model.cells[doc.indexOf(request.cell_id)];
    cell.setMetadata(request.metadata ?? {});
    return doc.after([cell.getId()]);
  },

  restore: (doc, request): Answer<'restore'> => {
    // Put cells back as they were before a turn: the cells it created (`delete`) go and the
    // changed ones come back so that the cells stand in `order`, which the kernel worked out
    // (larik_jupyter/checkpoint/cells.py `placed_order`, the one placement rule) from the order
    // `expect` fingerprints; `checked` refuses the request if the cells moved since.
    // Inside a transaction the shared model's `cells` still lists the cells as they were before
    // it (it follows the Yjs array only when the transaction ends), so no index is read there.
    const model = doc.model;
    const cellOf = new Map((request.cells ?? []).map(cell => [String(cell.id), cell]));
    if (doc.restored(request.order ?? [], cellOf, request.delete ?? [])) {
      return doc.after([...cellOf.keys()]); // restored already: the request came twice
    }
    doc.checked(null);
    const touched = new Set<string>([...(request.delete ?? []), ...cellOf.keys()]);
    const ids = model.cells.map(cell => cell.getId());
    model.transact(() => {
      for (let i = ids.length - 1; i >= 0; i--) {
        if (touched.has(ids[i])) {
          model.deleteCell(i);
        }
      }
      // In `order` the kept cells are already in place; each restored cell goes in at its
      // final index, everything before it being final already.
      (request.order ?? []).forEach((id, index) => {
        const cell = cellOf.get(id);
        if (cell !== undefined) {
          model.insertCell(index, fromJson<ICell>(cell));
        }
      });
    });
    return doc.after([...cellOf.keys()]);
  }
};

/** What is wrong with a request, checked against the declared fields of its op; null: nothing. */
function problemOf(data: JsonObject): string | null {
  const fields = FIELDS[String(data.op)];
  if (!fields) {
    return `malformed request: unknown op ${JSON.stringify(data.op)}`;
  }
  for (const [name, [types, required]] of Object.entries(fields)) {
    const value = data[name];
    if (value === undefined) {
      if (required) {
        return `malformed request: ${data.op} needs ${name}`;
      }
      continue;
    }
    const kind = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
    if (!types.includes(kind)) {
      return `malformed request: ${data.op}'s ${name} is ${kind}, not ${types.join(' or ')}`;
    }
  }
  return null;
}

function validId(id: Json | undefined): number {
  return typeof id === 'number' && Number.isInteger(id) ? id : 0;
}

/** A cell's metadata, when the kernel's JSON of it holds an object there. */
function metadataOf(cell: JsonObject | undefined): JsonObject | undefined {
  const metadata = cell?.metadata;
  return isObject(metadata) ? metadata : undefined;
}

/**
 * Show "edited by Larik · prompt N" on a cell until the user edits or runs it; clicking it
 * calls `open` (which opens that prompt).
 */
function mark(
  panel: NotebookPanel,
  id: string,
  target: IProvenance,
  fromKernel: () => boolean,
  open: (target: IProvenance) => void
): void {
  const widget = panel.content.widgets.find(w => w.model.id === id);
  if (!widget) {
    return;
  }
  unmark(widget);
  const badge = document.createElement('div');
  badge.className = 'jp-larik-marker';
  badge.textContent = `edited by Larik · prompt ${target.prompt}`;
  badge.title = `Open prompt ${target.prompt} of session ${target.session} in the Larik sidebar`;
  badge.setAttribute('role', 'button');
  badge.addEventListener('click', () => open(target));
  widget.addClass('jp-larik-edited');
  const edited = (_: unknown, change: { sourceChange?: unknown }) => {
    if (change.sourceChange && !fromKernel()) {
      unmark(widget);
    }
  };
  widget.model.sharedModel.changed.connect(edited);
  const disconnect = () => widget.model.sharedModel.changed.disconnect(edited);
  markers.set(widget, disconnect);
  // Above the cell's content once the cell has built it (a cell of a notebook just opened
  // may not have yet, and a badge put in before would land between its input and outputs).
  void widget.ready.then(() => {
    if (markers.get(widget) === disconnect) {
      widget.node.prepend(badge);
    }
  });
}

const markers = new WeakMap<Cell, () => void>();

function unmark(widget: Cell): void {
  markers.get(widget)?.();
  markers.delete(widget);
  widget.removeClass('jp-larik-edited');
  widget.node.querySelectorAll(':scope > .jp-larik-marker').forEach(node => node.remove());
}
