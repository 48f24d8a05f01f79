/**
 * Rendering a session's canonical entries: Markdown text, collapsed tool calls, coloured diffs.
 */
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { PageEntry, ShownBlock, ShownCall, ShownImage, ShownResult, UnfoundNumber } from './api';

/** A new `tag` element with `className` and, when given, `text`. */
export function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** A diff as the server rendered it (`textdiff.diff_html`: the one diff rendering every
 * front end shows, escaped there); any other result text as it is. */
export function diffOrText(text: string, html?: string): HTMLElement {
  if (html === undefined) {
    return element('pre', 'jp-larik-pre', text);
  }
  const node = element('div', 'jp-larik-diff');
  node.innerHTML = html;
  return node;
}

function collapsed(summary: string, body: HTMLElement, className: string): HTMLElement {
  const details = element('details', className);
  details.appendChild(element('summary', '', summary));
  details.appendChild(body);
  return details;
}

function resultText(content: ShownResult['content']): string {
  if (typeof content === 'string') {
    return content;
  }
  return content.map(block => (block.type === 'text' ? block.text : `[${block.type}]`)).join('\n');
}

/** An `image` block as an <img> (base64 data becomes a data URL). */
function image(block: ShownImage): HTMLElement {
  const source = block.source;
  const img = document.createElement('img');
  img.className = 'jp-larik-image';
  img.alt = source.media_type ?? 'image';
  img.src =
    source.type === 'base64'
      ? `data:${source.media_type ?? 'image/png'};base64,${source.data ?? ''}`
      : source.url ?? '';
  return img;
}

function isImage(block: ShownBlock): block is ShownImage {
  return block.type === 'image';
}

/** What the front end added to a prompt for the model: the notebook context, attachments, an undo's note. */
function isContext(text: string): boolean {
  return text.startsWith('<notebook-context') || text.startsWith('<notebook-data') || text.startsWith('<system-note>');
}

/**
 * How a person reads such a block: a label, and the text without the wrapping meant for the
 * model (larik_jupyter/session/context_view.py `context_view` does the same).
 */
function contextView(text: string): [string, string] {
  const note = /^<system-note>([\s\S]*)<\/system-note>$/.exec(text.trim());
  if (note) {
    return ['Note to the model', note[1].trim()];
  }
  const data = /^<notebook-data nonce="([^"]*)" source="([^"]*)">\n[^\n]*\n([\s\S]*)\n<\/notebook-data nonce="\1">$/.exec(text.trim());
  if (data) {
    return [`Attached ${data[2].replace(/^--with /, '')}`, data[3]];
  }
  return [text.startsWith('<notebook-context') ? 'Notebook context' : 'Attached', text];
}

interface ITodo {
  content: string;
  status: string;
}

/** The plan a `todo_write` input sets, or null when it is not one. */
export function planOf(input: unknown): ITodo[] | null {
  const todos = (input as { todos?: unknown } | null)?.todos;
  if (!Array.isArray(todos)) {
    return null;
  }
  const valid = todos.every(
    t => typeof t?.content === 'string' && ['pending', 'in_progress', 'completed'].includes(t?.status)
  );
  return valid ? (todos as ITodo[]) : null;
}

/** A plan as a checklist: one disabled checkbox per item, the item in progress marked. */
export function renderPlan(todos: ITodo[]): HTMLElement {
  const node = element('div', 'jp-larik-plan');
  const done = todos.filter(t => t.status === 'completed').length;
  node.appendChild(element('div', 'jp-larik-plan-title', `Plan · ${done}/${todos.length} done`));
  const list = element('ul', 'jp-larik-plan-items');
  for (const todo of todos) {
    const item = element('li', `jp-larik-plan-${todo.status}`);
    const box = element('input', '');
    box.type = 'checkbox';
    box.disabled = true;
    box.checked = todo.status === 'completed';
    item.appendChild(box);
    const label = todo.status === 'in_progress' ? `${todo.content} (in progress)` : todo.content;
    item.appendChild(element('span', '', ' ' + label));
    list.appendChild(item);
  }
  node.appendChild(list);
  return node;
}

/** The hint on a number no output of its turn shows (larik_jupyter/session/numbers.py `HINT`). */
export const UNFOUND_HINT = 'not found in any output of this turn';

/**
 * `text` with each unfound number wrapped in a dotted underline carrying the hint, as
 * larik_jupyter/session/numbers.py `mark` writes it; the server found them (offsets in UTF-16).
 */
export function markUnfound(text: string, numbers: UnfoundNumber[]): string {
  let out = '';
  let at = 0;
  for (const number of numbers) {
    out += text.slice(at, number.start);
    out += `<span class="larik-unfound" style="text-decoration: underline dotted" title="${UNFOUND_HINT}">`;
    out += text.slice(number.start, number.end) + '</span>';
    at = number.end;
  }
  return out + text.slice(at);
}

/** A turn's count line: "2 numbers not found in this turn's outputs". */
export function unfoundCount(text: string): HTMLElement {
  return element('div', 'jp-larik-unfound-count', text);
}

/** Renders entries into DOM nodes using JupyterLab's Markdown renderer. */
export class TranscriptRenderer {
  constructor(private readonly rendermime: IRenderMimeRegistry) {}

  // Tool calls by id, so a result can be shown as what its call was (a plan, a skill load).
  private readonly calls = new Map<string, ShownCall>();
  // Prompts rendered so far: entries come in file order, so this is the next one's number - 1.
  private prompts = 0;

  /** Forget the calls and prompts of the transcript shown before. */
  reset(): void {
    this.calls.clear();
    this.prompts = 0;
  }

  private special(block: ShownResult): HTMLElement | null {
    const call = this.calls.get(block.tool_use_id);
    if (!call || block.is_error) {
      return null;
    }
    if (call.name === 'todo_write') {
      const todos = planOf(call.input);
      return todos ? renderPlan(todos) : null;
    }
    const name = call.input.name;
    if (call.name === 'skill' && typeof name === 'string') {
      return collapsed(`loaded skill ${name}`, diffOrText(resultText(block.content), block.diff_html), 'jp-larik-skill');
    }
    return null;
  }

  private async markdown(text: string): Promise<HTMLElement> {
    const model = this.rendermime.createModel({ data: { 'text/markdown': text } });
    const renderer = this.rendermime.createRenderer('text/markdown');
    await renderer.renderModel(model);
    return renderer.node;
  }

  private async block(block: ShownBlock, unfound?: UnfoundNumber[]): Promise<HTMLElement | null> {
    switch (block.type) {
      case 'text':
        if (isContext(block.text)) {
          const [label, body] = contextView(block.text);
          return collapsed(label, element('pre', 'jp-larik-pre', body), 'jp-larik-context');
        }
        return this.markdown(unfound ? markUnfound(block.text, unfound) : block.text);
      case 'thinking':
        return collapsed('Thinking', element('pre', 'jp-larik-pre', block.thinking), 'jp-larik-thinking');
      case 'tool_use': {
        this.calls.set(block.id, block);
        // The server's one-line summary (larik_jupyter/session/call_summary.py), the one the notebook shows.
        const call = collapsed(
          block.summary || block.name,
          element('pre', 'jp-larik-pre', JSON.stringify(block.input, null, 2)),
          'jp-larik-tool'
        );
        if (block.hint) {
          call.querySelector('summary')!.title = block.hint;
        }
        return call;
      }
      case 'tool_result': {
        let node = this.special(block) ?? collapsed(
          block.is_error ? '↳ tool error' : '↳ result',
          diffOrText(resultText(block.content), block.diff_html),
          'jp-larik-tool-result'
        );
        if (block.variable_lines?.length) {
          // What the call did to the user's variables, in the words every view uses (the server says them).
          const both = element('div', 'jp-larik-tool-variables');
          both.appendChild(node);
          both.appendChild(element('div', 'jp-larik-variables', 'Variables · ' + block.variable_lines.join(' · ')));
          node = both;
        }
        if (block.receipt_lines?.length) {
          // One line per receipt, in the words every view uses (the server says them).
          const both = element('div', 'jp-larik-tool-receipts');
          both.appendChild(node);
          block.receipt_lines.forEach(line => both.appendChild(element('div', 'jp-larik-receipt', 'Receipt · ' + line)));
          node = both;
        }
        const images = typeof block.content === 'string' ? [] : block.content.filter(isImage);
        if (!images.length) {
          return node;
        }
        const wrapper = element('div', 'jp-larik-tool-images');
        wrapper.appendChild(node);
        images.forEach(inner => wrapper.appendChild(image(inner)));
        return wrapper;
      }
      case 'image':
        return image(block);
      default:
        return null;
    }
  }

  /**
   * One entry as a node, or null for entries with nothing to show (usage, meta); `unfound`
   * holds the numbers to mark in its text blocks, by block index.
   */
  async entry(entry: PageEntry, unfound?: Map<number, UnfoundNumber[]>): Promise<HTMLElement | null> {
    if (entry.type === 'compaction') {
      const node = element('div', 'jp-larik-entry jp-larik-compaction');
      node.appendChild(collapsed('Context compacted', element('pre', 'jp-larik-pre', entry.summary ?? ''), ''));
      return node;
    }
    if (entry.type !== 'message' || !entry.message) {
      return null;
    }
    const message = entry.message;
    // A prompt as docs/format.md defines it: text and no tool results (it starts a turn).
    const isPrompt =
      message.role === 'user' &&
      message.content.some(b => b.type === 'text') &&
      !message.content.some(b => b.type === 'tool_result');
    const node = element('div', `jp-larik-entry jp-larik-${isPrompt ? 'prompt' : message.role}`);
    node.dataset.entryId = entry.id;
    if (isPrompt) {
      // The number the agent writes into the `larik` metadata of the cells this prompt changed.
      node.dataset.prompt = String(++this.prompts);
    }
    for (const [index, block] of message.content.entries()) {
      const rendered = await this.block(block, unfound?.get(index));
      if (rendered) {
        node.appendChild(rendered);
      }
    }
    if (message.interrupted) {
      node.appendChild(element('div', 'jp-larik-note', '(interrupted)'));
    }
    return node;
  }
}
