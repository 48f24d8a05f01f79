/**
 * Typed client for the `/larik/api/` endpoints of the larik_jupyter server extension.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import {
  ApprovalAnswer,
  Checkpoints,
  DeleteRequest,
  NotebookRequest,
  NotebookWritten,
  PageApprovals,
  SessionList,
  ShownMessage,
  TranscriptPage
} from './rest';

// The endpoints' answers, generated from their Python models (larik_jupyter/frontends/server/schema.py).
export type {
  CheckpointTurn,
  Checkpoints,
  EgressTurn,
  PageApproval,
  PageApprovals,
  PageEntry,
  PromptInfo,
  SessionList,
  SessionOut,
  ShownCall,
  ShownImage,
  ShownResult,
  TreeNode,
  TurnChange,
  UnfoundCount,
  UnfoundInBlock,
  UnfoundNumber,
  VariableChange
} from './rest';

/** A block of a shown message (`ShownMessage.content`). */
export type ShownBlock = ShownMessage['content'][number];

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
export async function listSessions(cwd: string): Promise<SessionList> {
  return (await request('sessions', { cwd })).json();
}

/** One page of a session's canonical transcript. */
export async function transcriptPage(
  cwd: string,
  id: string,
  offset: number,
  limit: number
): Promise<TranscriptPage> {
  return (await request(`sessions/${id}`, { cwd, offset, limit })).json();
}

/** The session's undoable turns, newest first, with per-file diffs. */
export async function checkpoints(cwd: string, id: string): Promise<Checkpoints> {
  return (await request(`sessions/${id}/checkpoints`, { cwd })).json();
}

/** The Markdown export, byte for byte as `larik-jupyter export` writes it. */
export async function exportMarkdown(cwd: string, id: string): Promise<Blob> {
  return (await request(`sessions/${id}/export`, { cwd })).blob();
}

/** Write the session (up to prompt `at`) as a new notebook in `cwd`; resolves to its path
 * relative to the server root. */
export async function writeNotebook(cwd: string, id: string, at: number | null): Promise<string> {
  const body: NotebookRequest = { at };
  const response = await request(`sessions/${id}/notebook`, { cwd }, { method: 'POST', body: JSON.stringify(body) });
  return ((await response.json()) as NotebookWritten).path;
}

/** Delete a session, confirming with the token the listing handed out. */
export async function deleteSession(cwd: string, id: string, token: string): Promise<void> {
  const body: DeleteRequest = { token };
  await request(`sessions/${id}/delete`, { cwd }, { method: 'POST', body: JSON.stringify(body) });
}

/** The approvals the kernels running notebook `path` wait for (jupyter-server-documents). */
export async function pageApprovals(path: string): Promise<PageApprovals> {
  return (await request('approvals', { path })).json();
}

/** Answer approval `id` as its card's buttons do. */
export async function answerApproval(id: string, answer: ApprovalAnswer): Promise<void> {
  await request(`approvals/${encodeURIComponent(id)}`, {}, { method: 'POST', body: JSON.stringify(answer) });
}
