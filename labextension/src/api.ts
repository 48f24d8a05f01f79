/**
 * Typed client for the `/larik/api/` endpoints of the larik_jupyter server extension.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export interface ISessionInfo {
  id: string;
  time: string;
  updated?: string; // when it was last written to (its last entry's time)
  held?: boolean; // a live kernel or process has it open for writing
  model?: string | null; // its current model, provider:model
  cost_label?: string; // what it cost, as every view of larik says it ("price unknown" when unknown)
  first_prompt: string;
  message_count: number;
  fork_of: string | null;
  fork_at: number | null;
  fork_prompt?: number | null;
  size: number;
  error: string | null;
  delete_token: string;
}

export interface IPromptInfo {
  position: number;
  first_line: string;
  /** The whole prompt: what the search matches. */
  text?: string;
  time: string | null;
}

export interface ITreeNode {
  id: string;
  fork_of?: string | null;
  /** A branch's last prompt shared with its source (0: before the first). */
  fork_prompt?: number | null;
  /** The branch's source is no longer among the directory's sessions. */
  parent_deleted?: boolean;
  prompts: IPromptInfo[];
  children: ITreeNode[];
}

export interface ISessionList {
  cwd: string;
  sessions: ISessionInfo[];
  tree: ITreeNode[];
}

export interface IContentBlock {
  type: string;
  id?: string;
  tool_use_id?: string;
  text?: string;
  thinking?: string;
  name?: string;
  input?: unknown;
  /** A tool call's one-line summary, cells named by position (the server's, as the notebook words it). */
  summary?: string;
  /** The ids of the cells a notebook call names, shown on hover. */
  hint?: string;
  content?: string | IContentBlock[];
  is_error?: boolean;
  /** A result that is a diff, as the one diff HTML every front end shows (the server's). */
  diff_html?: string;
  source?: { type: string; media_type?: string; data?: string; url?: string };
  /** What a kernel call did to the user's variables (docs/format.md, Variable changes). */
  variables?: IVariableChange[];
}

export interface IVariableChange {
  name: string;
  change: 'created' | 'rebound' | 'changed' | 'deleted' | 'unknown';
  before?: string;
  after?: string;
  note?: string;
}

export interface IEntry {
  id: string;
  type: 'meta' | 'message' | 'compaction' | 'usage';
  time: string;
  message?: { role: 'user' | 'assistant'; content: IContentBlock[]; interrupted?: boolean };
  summary?: string;
  meta?: { cwd: string; model?: string; fork_of?: string; fork_at?: number };
}

/** A number a reply states that no output of its turn supports (UTF-16 offsets in the block's text). */
export interface IUnfoundNumber {
  start: number;
  end: number;
  text: string;
}

/** The unfound numbers of one text block: entry index in the transcript, block index in its content. */
export interface IUnfoundInBlock {
  entry: number;
  block: number;
  numbers: IUnfoundNumber[];
}

/** A turn's count line, shown after its last message (`entry`). */
export interface IUnfoundCount {
  entry: number;
  count: number;
  text: string;
  numbers: string[];
}

/** What the requests of one prompt's turn sent (larik_jupyter/egress/ledger.py), by prompt number. */
export interface IEgressTurn {
  prompt: number;
  requests: number;
  bytes: number;
  withheld: string[];
  text: string;
}

export interface ITranscriptPage {
  id: string;
  total: number;
  offset: number;
  limit: number;
  entries: IEntry[];
  /** Numbers in replies found in no output of their turn (docs/format.md). */
  unfound?: IUnfoundInBlock[];
  unfound_counts?: IUnfoundCount[];
  egress?: IEgressTurn[];
}

export interface ICheckpointFile {
  path: string;
  existed: boolean;
  diff: string;
  /** `diff` as the one diff HTML every front end shows (the server's). */
  diff_html: string;
}

export interface ICheckpointTurn {
  turn: number;
  prompt?: number | null;
  files: ICheckpointFile[];
}

export interface ICheckpoints {
  id: string;
  turns: ICheckpointTurn[];
}

/** An error answered by the server, carrying its one-sentence message. */
export class LarikApiError extends Error {
  constructor(
    readonly status: number,
    message: string
  ) {
    super(message);
  }
}

async function request(
  path: string,
  query: Record<string, string | number>,
  init: RequestInit = {}
): Promise<Response> {
  const settings = ServerConnection.makeSettings();
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    params.set(key, String(value));
  }
  const url = URLExt.join(settings.baseUrl, 'larik', 'api', path) + '?' + params;
  const response = await ServerConnection.makeRequest(url, init, settings);
  if (!response.ok) {
    let message = response.statusText;
    try {
      message = (await response.json()).message ?? message;
    } catch {
      // a non-JSON error body: keep the status text
    }
    throw new LarikApiError(response.status, message);
  }
  return response;
}

/** Sessions of `cwd` (relative to the server root) with their fork tree. */
export async function listSessions(cwd: string): Promise<ISessionList> {
  return (await request('sessions', { cwd })).json();
}

/** One page of a session's canonical transcript. */
export async function transcriptPage(
  cwd: string,
  id: string,
  offset: number,
  limit: number
): Promise<ITranscriptPage> {
  return (await request(`sessions/${id}`, { cwd, offset, limit })).json();
}

/** The session's undoable turns, newest first, with per-file diffs. */
export async function checkpoints(cwd: string, id: string): Promise<ICheckpoints> {
  return (await request(`sessions/${id}/checkpoints`, { cwd })).json();
}

/** The Markdown export, byte for byte as `larik-jupyter export` writes it. */
export async function exportMarkdown(cwd: string, id: string): Promise<Blob> {
  return (await request(`sessions/${id}/export`, { cwd })).blob();
}

/** Write the session (up to prompt `at`) as a new notebook in `cwd`; resolves to its path
 * relative to the server root. */
export async function writeNotebook(cwd: string, id: string, at: number | null): Promise<string> {
  const response = await request(`sessions/${id}/notebook`, { cwd }, { method: 'POST', body: JSON.stringify({ at }) });
  return ((await response.json()) as { path: string }).path;
}

/** Delete a session, confirming with the token the listing handed out. */
export async function deleteSession(cwd: string, id: string, token: string): Promise<void> {
  await request(`sessions/${id}/delete`, { cwd }, { method: 'POST', body: JSON.stringify({ token }) });
}
