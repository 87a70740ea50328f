// Owns the browser console: sign-in, the directory lists, and a document view with a live editor, presence and comments.
import { EditorState } from '@codemirror/state';
import { EditorView, keymap, lineNumbers } from '@codemirror/view';
import * as decoding from 'lib0/decoding';
import { yCollab, yUndoManagerKeymap } from 'y-codemirror.next';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { call, type CommentView, type Credentials, type DocumentRow, type Organization, type PresenceUser, type Thread, type UserRow } from './api.js';

/** Extension frame 100 (docs/protocol.md): live comment and presence changes, sent to `ext=1` connections. */
const LIVE_MESSAGE_TYPE = 100;
/** Editors bind the Yjs root named `content`, as Plait's REST CRDT operations do (README). */
const ROOT = 'content';
const CREDENTIALS_KEY = 'plait-console-credentials';
const COLORS = ['#2563eb', '#db2777', '#059669', '#d97706', '#7c3aed', '#dc2626'];

interface LiveMessage {
  readonly snapshot: boolean;
  readonly annotations: ReadonlyArray<{ op: 'upsert'; annotation: Thread } | { op: 'delete'; annotationId: string }>;
  readonly presence: { users: readonly PresenceUser[]; removed: readonly string[] };
}

const $ = <T extends HTMLElement>(selector: string): T => {
  const found = document.querySelector<T>(selector);
  if (found === null) throw new Error(`the page has no ${selector}`);
  return found;
};

/** Builds an element with text and attributes; text is set as text, never parsed as HTML. */
function el(tag: string, attributes: Record<string, string> = {}, text = '', children: HTMLElement[] = []): HTMLElement {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  if (text !== '') node.textContent = text;
  for (const child of children) node.append(child);
  return node;
}

function showError(error: unknown): void {
  $('#error').textContent = error instanceof Error ? error.message : String(error);
}

function clearError(): void {
  $('#error').textContent = '';
}

function savedCredentials(): Credentials | undefined {
  const raw = sessionStorage.getItem(CREDENTIALS_KEY);
  if (raw === null) return undefined;
  const parsed = JSON.parse(raw) as Partial<Credentials>;
  return typeof parsed.apiKey === 'string' && typeof parsed.authToken === 'string' ? { apiKey: parsed.apiKey, authToken: parsed.authToken } : undefined;
}

/** The sign-in form: the API key and auth token stay in this tab's session storage only. */
function signIn(): void {
  const form = $<HTMLFormElement>('#signin');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const credentials = { apiKey: $<HTMLInputElement>('#apiKey').value.trim(), authToken: $<HTMLInputElement>('#authToken').value.trim() };
    call<Organization[]>(credentials, '/v2/organizations/get', {}).then(
      () => {
        sessionStorage.setItem(CREDENTIALS_KEY, JSON.stringify(credentials));
        void showDirectory(credentials);
      },
      showError,
    );
  });
  $('#signout').addEventListener('click', () => {
    sessionStorage.removeItem(CREDENTIALS_KEY);
    location.hash = '';
    location.reload();
  });
}

async function showDirectory(credentials: Credentials): Promise<void> {
  clearError();
  $('#signin').hidden = true;
  $('#signout').hidden = false;
  $('#directory').hidden = false;
  const organizations = (await call<Organization[]>(credentials, '/v2/organizations/get', {})).data;
  const list = $('#organizations');
  list.replaceChildren(
    ...organizations.map((org) => {
      const button = el('button', { type: 'button', 'data-org': org.id }, org.organizationName ?? org.id);
      button.addEventListener('click', () => void showOrganization(credentials, org.id).catch(showError));
      return el('li', {}, '', [button]);
    }),
  );
  if (organizations.length === 0) list.replaceChildren(el('li', {}, 'No organizations yet: add one with /v2/organizations/add, or open a document by id below.'));
  const open = $<HTMLFormElement>('#open');
  open.onsubmit = (event) => {
    event.preventDefault();
    const organizationId = $<HTMLInputElement>('#openOrg').value.trim();
    const documentId = $<HTMLInputElement>('#openDoc').value.trim();
    if (organizationId !== '' && documentId !== '') void openDocument(credentials, organizationId, documentId).catch(showError);
  };
}

async function showOrganization(credentials: Credentials, organizationId: string): Promise<void> {
  clearError();
  $<HTMLInputElement>('#openOrg').value = organizationId;
  const [documents, users] = await Promise.all([
    call<DocumentRow[]>(credentials, '/v2/organizations/documents/get', { organizationId }),
    call<UserRow[]>(credentials, '/v2/users/get', { organizationId }),
  ]);
  $('#documents').replaceChildren(
    ...documents.data.map((doc) => {
      const button = el('button', { type: 'button', 'data-doc': doc.id }, doc.documentName ?? doc.id);
      button.addEventListener('click', () => void openDocument(credentials, organizationId, doc.id).catch(showError));
      return el('li', {}, '', [button, el('span', { class: 'muted' }, ` ${doc.accessType ?? ''}${doc.disabled === true ? ' disabled' : ''}`)]);
    }),
  );
  $('#users').replaceChildren(...users.data.map((user) => el('li', {}, `${user.name ?? user.userId} (${user.userId}) ${user.accessRole ?? ''}`)));
}

/** Mints a user token for the console's user (editor or viewer of this document) through Generate Token. */
async function consoleToken(credentials: Credentials, organizationId: string, documentId: string, name: string, role: string): Promise<string> {
  const userId = `console-${name.toLowerCase().replace(/[^a-z0-9_-]+/g, '-') || 'user'}`;
  const answer = await call<{ token: string }>(credentials, '/v2/auth/generate_token', {
    userId,
    userProperties: { name, email: `${userId}@console.invalid` },
    permissions: { resources: [{ type: 'document', id: documentId, organizationId, accessRole: role }] },
  });
  return answer.data.token;
}

let closeDocument: (() => void) | undefined;

async function openDocument(credentials: Credentials, organizationId: string, documentId: string): Promise<void> {
  clearError();
  closeDocument?.();
  const name = $<HTMLInputElement>('#displayName').value.trim() || 'Console user';
  const role = $<HTMLSelectElement>('#role').value === 'viewer' ? 'viewer' : 'editor';
  const token = await consoleToken(credentials, organizationId, documentId, name, role);
  $('#document').hidden = false;
  $('#docTitle').textContent = `${organizationId} / ${documentId}${role === 'viewer' ? ' (read-only)' : ''}`;

  const doc = new Y.Doc();
  const base = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/sync`;
  const provider = new WebsocketProvider(base, [organizationId, documentId, 'main'].map(encodeURIComponent).join('/'), doc, {
    params: { token, ext: '1' },
    disableBc: true,
  });
  const color = COLORS[Math.abs([...name].reduce((h, c) => (h * 31 + c.charCodeAt(0)) | 0, 7)) % COLORS.length] ?? '#2563eb';
  provider.awareness.setLocalStateField('user', { name, color, colorLight: `${color}33` });
  const threads = new Map<string, Thread>();
  const presence = new Map<string, PresenceUser>();
  provider.messageHandlers[LIVE_MESSAGE_TYPE] = (_encoder, decoder) => {
    const message = JSON.parse(decoding.readVarString(decoder)) as LiveMessage;
    if (message.snapshot) {
      threads.clear();
      presence.clear();
    }
    for (const change of message.annotations) {
      if (change.op === 'upsert') threads.set(change.annotation.annotationId, change.annotation);
      else threads.delete(change.annotationId);
    }
    for (const user of message.presence.users) presence.set(user.userId, user);
    for (const userId of message.presence.removed) presence.delete(userId);
    renderThreads(threads);
    renderPresence(presence);
  };
  provider.on('status', ({ status }: { status: string }) => {
    $('#status').textContent = status;
  });

  const text = doc.getText(ROOT);
  const view = new EditorView({
    parent: $('#editor'),
    state: EditorState.create({
      doc: text.toString(),
      extensions: [lineNumbers(), keymap.of(yUndoManagerKeymap), yCollab(text, provider.awareness), EditorState.readOnly.of(role === 'viewer'), EditorView.editable.of(role !== 'viewer'), EditorView.lineWrapping],
    }),
  });

  const form = $<HTMLFormElement>('#comment');
  form.onsubmit = (event) => {
    event.preventDefault();
    const input = $<HTMLInputElement>('#commentText');
    const commentText = input.value.trim();
    if (commentText === '') return;
    const from = { userId: `console-${name.toLowerCase().replace(/[^a-z0-9_-]+/g, '-') || 'user'}`, name };
    call(credentials, '/v2/commentannotations/add', { organizationId, documentId, commentAnnotations: [{ commentData: [{ commentText, from }] }] }).then(() => {
      input.value = '';
    }, showError);
  };

  closeDocument = () => {
    view.destroy();
    provider.destroy();
    doc.destroy();
    $('#editor').replaceChildren();
  };
}

function renderThreads(threads: ReadonlyMap<string, Thread>): void {
  const items = [...threads.values()].map((thread) => {
    const comments = thread.comments.map((comment: CommentView) => el('p', { class: 'comment' }, `${comment.from?.name ?? comment.from?.userId ?? '?'}: ${comment.commentText ?? ''}`));
    return el('li', { 'data-thread': thread.annotationId }, '', [el('span', { class: 'muted' }, thread.status?.name ?? ''), ...comments]);
  });
  $('#threads').replaceChildren(...items);
}

function renderPresence(presence: ReadonlyMap<string, PresenceUser>): void {
  $('#presence').replaceChildren(
    ...[...presence.values()].map((user) => el('li', { 'data-user': user.userId, 'data-status': user.status ?? '' }, `${user.name ?? user.userId} · ${user.status ?? ''}`)),
  );
}

signIn();
const credentials = savedCredentials();
if (credentials !== undefined) void showDirectory(credentials).catch(showError);
