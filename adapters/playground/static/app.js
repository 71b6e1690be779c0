// The playground page: a list of threads, one open thread kept live over a WebSocket.
"use strict";

const $ = (id) => document.getElementById(id);
const els = {
  list: $("thread-list"), title: $("thread-title"), model: $("model-label"), conn: $("connection"),
  pins: $("pins"), scroller: $("scroller"), empty: $("empty"), messages: $("messages"),
  status: $("status"), statusText: $("status-text"), form: $("composer"), input: $("input"),
  send: $("send"), name: $("user-name"), newThread: $("new-thread"), toast: $("toast"),
  files: $("files"), chosen: $("chosen"), attach: $("attach"), app: $("app"), menu: $("menu"),
  backdrop: $("backdrop"),
};
let chosen = []; // the files to send with the next message

function randomId(bytes) {
  const a = new Uint8Array(bytes);
  crypto.getRandomValues(a);
  return Array.from(a, (b) => b.toString(16).padStart(2, "0")).join("");
}

// Who you are comes from the session cookie the page set; you only choose the name shown.
const me = { name: localStorage.getItem("threadline.name") || "You" };
const clientId = randomId(8); // this tab: private notes come back to it only
const view = {
  botName: "Threadline",
  threads: new Map(), // id → {id, title, updated_at}
  threadId: null,
  messages: new Map(), // id → message
  nodes: new Map(), // id → element
  pins: [],
  status: null,
  buffer: null, // changes that arrive while the open thread is being fetched
};
let loadToken = 0;
const PIN_ICON = '<svg viewBox="0 0 16 16" width="13" height="13" aria-hidden="true"><path fill="currentColor" d="M10.5 1.5l4 4-1.4.6-2.6 2.6.3 3.3-1.1 1.1-2.8-2.8-3.8 3.8H2.6v-.5l3.8-3.8-2.8-2.8 1.1-1.1 3.3.3 2.6-2.6z"/></svg>';

// --- fetching ----------------------------------------------------------------------------
async function getJson(url) {
  const response = await fetch(url, { cache: "no-store" });
  if (response.status === 401) toast("Your playground session has ended: reload the page.");
  if (!response.ok) throw Object.assign(new Error(`${url}: ${response.status}`), { status: response.status });
  return response.json();
}

async function postForm(url, body, files) {
  const form = new FormData();
  for (const [key, value] of Object.entries(body)) if (value !== null) form.append(key, value);
  for (const file of files) form.append("file", file, file.name);
  const response = await fetch(url, { method: "POST", body: form });
  const data = await response.json().catch(() => ({}));
  return { status: response.status, data };
}

async function postJson(url, body) {
  const response = await fetch(url, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  return { status: response.status, data };
}

async function loadInfo() {
  const info = await getJson("/api/info");
  view.botName = info.bot_name;
  els.model.textContent = info.model_label;
  els.model.classList.toggle("offline", /offline|demo/i.test(info.model_label));
}

async function loadThreads() {
  const data = await getJson("/api/threads");
  view.threads = new Map(data.threads.map((t) => [t.id, t]));
  renderThreadList();
  renderTitle();
}

async function loadThread() {
  const id = view.threadId;
  const token = ++loadToken;
  if (!id) return;
  view.buffer = [];
  let data;
  try {
    data = await getJson(`/api/threads/${encodeURIComponent(id)}`);
  } catch (error) {
    if (token === loadToken) view.buffer = null;
    if (error.status === 404 && token === loadToken) location.hash = "#/";
    return;
  }
  if (token !== loadToken) return;
  const buffered = view.buffer;
  view.buffer = null;
  clearThread();
  view.threads.set(id, data.thread);
  for (const message of data.messages) upsertMessage(message);
  view.pins = data.pins;
  view.status = data.status;
  for (const event of buffered) if (!(event.seq <= data.seq)) apply(event);
  renderThreadList();
  renderTitle();
  renderPins();
  renderStatus();
  scrollToEnd(true);
}

async function refresh() {
  await Promise.allSettled([loadInfo(), loadThreads(), loadThread()]);
}

// --- live changes --------------------------------------------------------------------------
let socket = null;
let retries = 0;

function connect() {
  setConnection("connecting", "connecting…");
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}/api/ws?client=${clientId}`);
  socket.onopen = () => {
    retries = 0;
    setConnection("live", "live");
    refresh();
  };
  socket.onmessage = (message) => onEvent(JSON.parse(message.data));
  socket.onclose = () => {
    setConnection("offline", "reconnecting…");
    setTimeout(connect, Math.min(10000, 500 * 2 ** retries++));
  };
}

function setConnection(state, text) {
  els.conn.dataset.state = state;
  els.conn.textContent = text;
}

function onEvent(event) {
  switch (event.type) {
    case "thread":
      view.threads.set(event.thread.id, event.thread);
      renderThreadList();
      renderTitle();
      return;
    case "resync":
      refresh();
      return;
    case "note":
      showNote(event.text, event.thread_id);
      return;
    case "error":
      if (event.thread_id === view.threadId) showNote(event.text, event.thread_id, "error");
      else toast(event.text);
      return;
    default:
      if (event.thread_id !== view.threadId) return;
      if (view.buffer) view.buffer.push(event);
      else apply(event);
  }
}

function apply(event) {
  const stick = nearEnd();
  switch (event.type) {
    case "message":
      upsertMessage(event.message);
      if (view.pins.includes(event.message.id)) renderPins();
      break;
    case "deleted":
      removeMessage(event.message_id);
      break;
    case "pins":
      view.pins = event.pins;
      renderPins();
      break;
    case "status":
      view.status = event.text;
      renderStatus();
      break;
    default:
      return;
  }
  scrollToEnd(stick);
}

// --- rendering -------------------------------------------------------------------------------
function clearThread() {
  view.messages.clear();
  view.nodes.clear();
  view.pins = [];
  view.status = null;
  els.messages.replaceChildren();
}

function upsertMessage(message) {
  const known = view.messages.get(message.id);
  if (known && known.edits > message.edits) return;
  view.messages.set(message.id, message);
  let node = view.nodes.get(message.id);
  if (!node) {
    node = messageNode(message);
    view.nodes.set(message.id, node);
    els.messages.append(node);
  }
  node.dataset.edits = String(message.edits);
  setMarkdown(node.querySelector(".msg-body"), message.text);
  node.querySelector(".msg-files").replaceChildren(...(message.files || []).map(fileNode));
  node.querySelector(".msg-buttons").replaceChildren(...message.buttons.map((b) => buttonNode(b, message.id)));
  els.empty.hidden = true;
}

// A file of a message: a download link (served as an attachment, never shown in this page).
function fileNode(file) {
  const kept = file.kept !== false;
  const node = document.createElement(kept ? "a" : "span");
  node.className = kept ? "file" : "file not-kept";
  if (kept) {
    node.href = `/api/files/${encodeURIComponent(view.threadId)}/${encodeURIComponent(file.id)}`;
    node.download = file.name;
    node.rel = "noopener";
  } else {
    node.title = "Over the size cap: not kept";
  }
  node.innerHTML = '<span class="file-name"></span><span class="file-size"></span>';
  node.firstElementChild.textContent = file.name;
  node.lastElementChild.textContent = sizeWords(file.size) + (kept ? "" : " · not kept");
  return node;
}

function sizeWords(size) {
  if (size < 1024) return `${size} bytes`;
  if (size < 1024 * 1024) return `${(size / 1024).toFixed(1)} KB`;
  return `${(size / (1024 * 1024)).toFixed(1)} MB`;
}

function renderChosen() {
  els.chosen.hidden = chosen.length === 0;
  els.chosen.replaceChildren(...chosen.map((file, index) => {
    const node = document.createElement("span");
    node.className = "file";
    node.innerHTML = '<span class="file-name"></span><span class="file-size"></span><button type="button" title="Remove">×</button>';
    node.firstElementChild.textContent = file.name;
    node.children[1].textContent = sizeWords(file.size);
    node.lastElementChild.addEventListener("click", () => {
      chosen = chosen.filter((_, i) => i !== index);
      renderChosen();
      fitInput();
    });
    return node;
  }));
}

function choose(files) {
  chosen = [...chosen, ...files];
  renderChosen();
  fitInput();
}

function messageNode(message) {
  const node = document.createElement("article");
  node.className = `msg ${message.bot ? "bot" : "user"}`;
  node.dataset.id = message.id;
  node.dataset.author = message.bot ? "bot" : "user";
  const initial = (message.author_name.trim()[0] || "?").toUpperCase();
  const hue = [...message.author_id].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 360, 7);
  node.innerHTML = `
    <div class="avatar" style="--hue:${hue}">${escapeHtml(initial)}</div>
    <div class="msg-main">
      <div class="msg-head">
        <span class="author">${escapeHtml(message.author_name)}</span>
        ${message.bot ? '<span class="app-tag">APP</span>' : ""}
        <time>${clockTime(message.created_at)}</time>
        <span class="pinned-tag">${PIN_ICON} pinned</span>
      </div>
      <div class="msg-body"></div>
      <div class="msg-files"></div>
      <div class="msg-buttons"></div>
    </div>`;
  return node;
}

// Markdown into ``node``; a code block that may scroll sideways can be reached with Tab.
function setMarkdown(node, text) {
  node.innerHTML = renderMarkdown(text);
  for (const pre of node.querySelectorAll("pre")) pre.tabIndex = 0;
}

function buttonNode(button, messageId) {
  const node = document.createElement("button");
  node.type = "button";
  node.className = `action ${button.style}`;
  node.textContent = button.label;
  node.addEventListener("click", () => click(node, button.action_id, messageId));
  return node;
}

function removeMessage(id) {
  view.messages.delete(id);
  view.nodes.get(id)?.remove();
  view.nodes.delete(id);
  view.pins = view.pins.filter((p) => p !== id);
  renderPins();
}

function renderPins() {
  const pinned = view.pins.filter((id) => view.messages.has(id));
  for (const [id, node] of view.nodes) node.classList.toggle("pinned", pinned.includes(id));
  els.pins.hidden = pinned.length === 0;
  els.pins.replaceChildren(...pinned.map((id) => {
    const node = document.createElement("div");
    node.className = "pin";
    node.dataset.id = id;
    node.title = "Show in the thread";
    node.tabIndex = 0;
    node.setAttribute("role", "button");
    node.innerHTML = `<span class="pin-icon" aria-hidden="true">${PIN_ICON}</span>
      <div class="pin-body"></div>`;
    setMarkdown(node.querySelector(".pin-body"), view.messages.get(id).text);
    node.addEventListener("click", () => flash(id));
    node.addEventListener("keydown", (event) => {
      if (event.key !== "Enter" && event.key !== " ") return;
      event.preventDefault();
      flash(id);
    });
    return node;
  }));
}

function renderStatus() {
  els.status.hidden = !view.status;
  els.statusText.textContent = view.status ? `${view.botName} is ${view.status}` : "";
}

function renderTitle() {
  const thread = view.threadId && view.threads.get(view.threadId);
  els.title.textContent = thread ? thread.title : "New thread";
  document.title = thread ? `${thread.title} · Threadline` : "Threadline playground";
  els.empty.hidden = Boolean(view.threadId);
}

function renderThreadList() {
  const threads = [...view.threads.values()].sort((a, b) => b.updated_at - a.updated_at);
  els.list.replaceChildren(...threads.map((thread) => {
    const link = document.createElement("a");
    link.className = "thread-link";
    link.href = `#/t/${thread.id}`;
    link.dataset.id = thread.id;
    link.classList.toggle("active", thread.id === view.threadId);
    link.innerHTML = `<span class="thread-name"></span><time>${dayOrTime(thread.updated_at)}</time>`;
    link.firstElementChild.textContent = thread.title;
    return link;
  }));
  if (!threads.length) els.list.innerHTML = '<p class="no-threads">No threads yet.</p>';
}

function showNote(text, threadId, kind = "note") {
  if (threadId && threadId !== view.threadId) return toast(text);
  const stick = nearEnd();
  const node = document.createElement("div");
  node.className = `ephemeral ${kind}`;
  node.innerHTML = `<span class="ephemeral-tag">${kind === "error" ? "Error" : "Only visible to you"}</span>
    <div class="ephemeral-body"></div>`;
  setMarkdown(node.querySelector(".ephemeral-body"), text);
  els.messages.append(node);
  scrollToEnd(stick);
}

function toast(text) {
  els.toast.textContent = text;
  els.toast.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { els.toast.hidden = true; }, 4000);
}

function flash(id) {
  const node = view.nodes.get(id);
  if (!node) return;
  node.scrollIntoView({ behavior: "smooth", block: "center" });
  node.tabIndex = -1;
  node.focus({ preventScroll: true });
  node.classList.remove("flash");
  void node.offsetWidth;
  node.classList.add("flash");
}

function nearEnd() {
  const s = els.scroller;
  return s.scrollHeight - s.scrollTop - s.clientHeight < 120;
}

function scrollToEnd(really) {
  if (really) els.scroller.scrollTop = els.scroller.scrollHeight;
}

function clockTime(seconds) {
  return new Date(seconds * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

function dayOrTime(seconds) {
  const date = new Date(seconds * 1000);
  if (date.toDateString() === new Date().toDateString()) return clockTime(seconds);
  return date.toLocaleDateString([], { month: "short", day: "numeric" });
}

// --- writing and clicking ----------------------------------------------------------------------
async function send(text, files) {
  const body = {
    thread_id: view.threadId, text, event_id: randomId(16), user_name: me.name,
  };
  for (let attempt = 0; attempt < 4; attempt += 1) {
    try {
      const { status, data } = files.length
        ? await postForm("/api/messages", body, files)
        : await postJson("/api/messages", body);
      if (status === 202) {
        if (data.thread_id !== view.threadId) location.hash = `#/t/${data.thread_id}`;
        return true;
      }
      if (status === 200 && data.note) { // a /threadline command: its answer is for you alone
        showNote(data.note, data.thread_id);
        return true;
      }
      toast(data.error || `The playground answered ${status}.`);
      return false;
    } catch {
      // the same event id again: the server and the core recognise a retry
      await new Promise((resolve) => setTimeout(resolve, 400 * 2 ** attempt));
    }
  }
  toast("Could not reach the playground server.");
  return false;
}

// A 👎 asks "what went wrong?" in one line; the answer is kept with it.
async function explain(formId, threadId) {
  const text = window.prompt("What went wrong? (one line)");
  if (text === null || !text.trim()) return;
  const { data } = await postJson("/api/explain", { form_id: formId, text, user_name: me.name });
  if (data.note) showNote(data.note, threadId);
}

// A form an MCP server asks for: one input a field, its errors shown beside it until it fits.
function formInput(field) {
  let input;
  if (field.kind === "boolean") {
    input = document.createElement("input");
    input.type = "checkbox";
    input.checked = field.default === true;
  } else if (field.kind === "choice" || field.kind === "choices") {
    input = document.createElement("select");
    input.multiple = field.kind === "choices";
    if (field.kind === "choice" && !field.required) input.append(new Option("", ""));
    for (const option of field.options) {
      const chosen = Array.isArray(field.default)
        ? field.default.includes(option.value) : field.default === option.value;
      input.append(new Option(option.title, option.value, chosen, chosen));
    }
  } else {
    input = document.createElement("input");
    input.type = field.kind === "string" ? "text" : "number";
    if (field.kind === "integer") input.step = "1";
    if (field.kind === "number") input.step = "any";
    if (field.default !== null && field.default !== undefined) input.value = String(field.default);
  }
  input.name = field.name;
  return input;
}

function formValue(input, field) {
  if (field.kind === "boolean") return input.checked;
  if (field.kind === "choices") return [...input.selectedOptions].map((o) => o.value);
  return input.value;
}

function openForm(form, threadId) {
  const dialog = document.createElement("dialog");
  dialog.className = "mcp-form";
  const body = document.createElement("form");
  body.method = "dialog";
  const head = document.createElement("p");
  head.textContent = `${form.server} asks: ${form.message}`;
  body.append(head);
  const inputs = new Map();
  const errors = new Map();
  for (const field of form.fields) {
    const label = document.createElement("label");
    const title = document.createElement("span");
    title.textContent = field.title + (field.required ? " *" : "");
    const input = formInput(field);
    const about = document.createElement("small");
    about.textContent = [field.description, field.hint].filter(Boolean).join(" · ");
    const error = document.createElement("small");
    error.className = "form-error";
    label.append(title, input, about, error);
    body.append(label);
    inputs.set(field.name, input);
    errors.set(field.name, error);
  }
  const send = document.createElement("button");
  send.textContent = "Send";
  send.value = "send";
  const close = document.createElement("button");
  close.textContent = "Close";
  close.value = "close";
  close.type = "button";
  close.addEventListener("click", () => dialog.close());
  body.append(send, close);
  body.addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = {};
    for (const field of form.fields) values[field.name] = formValue(inputs.get(field.name), field);
    const { data } = await postJson("/api/forms", {
      thread_id: threadId, form_id: form.id, values, user_name: me.name,
    });
    for (const [name, node] of errors) node.textContent = (data.errors || {})[name] || "";
    if (data.done || !data.errors || !Object.keys(data.errors).length) {
      dialog.close();
      if (data.note) showNote(data.note, threadId);
    }
  });
  dialog.append(body);
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
}

async function click(node, actionId, messageId) {
  node.disabled = true;
  try {
    const { status, data } = await postJson("/api/actions", {
      thread_id: view.threadId, action_id: actionId, user_name: me.name,
      client_id: clientId, message_id: messageId,
    });
    if (data.note) showNote(data.note, view.threadId);
    else if (status >= 400) toast(data.error || `The playground answered ${status}.`);
    if (data.ask) await explain(data.ask, view.threadId);
    if (data.form) openForm(data.form, view.threadId);
  } catch {
    toast("Could not reach the playground server.");
  } finally {
    node.disabled = false;
  }
}

function openThread(id) {
  view.threadId = id;
  loadToken += 1;
  view.buffer = null;
  clearThread();
  renderThreadList();
  renderTitle();
  renderPins();
  renderStatus();
  loadThread();
  els.input.focus();
}

function routedThread() {
  const match = location.hash.match(/^#\/t\/([A-Za-z0-9_-]+)$/);
  return match ? match[1] : null;
}

function fitInput() {
  els.input.style.height = "auto";
  els.input.style.height = `${Math.min(els.input.scrollHeight, 200)}px`;
  els.send.disabled = els.input.value.trim() === "" && chosen.length === 0;
}

els.form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = els.input.value;
  const files = chosen;
  if (!text.trim() && !files.length) return;
  els.input.value = "";
  chosen = [];
  renderChosen();
  fitInput();
  if (!(await send(text, files)) && !els.input.value && !chosen.length) {
    els.input.value = text;
    chosen = files;
    renderChosen();
    fitInput();
  }
});
els.files.addEventListener("change", () => {
  choose([...els.files.files]);
  els.files.value = "";
});
els.scroller.addEventListener("dragover", (event) => event.preventDefault());
els.scroller.addEventListener("drop", (event) => {
  event.preventDefault();
  if (event.dataTransfer?.files.length) choose([...event.dataTransfer.files]);
});
els.input.addEventListener("input", fitInput);
els.input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    els.form.requestSubmit();
  }
});
els.name.value = me.name;
els.name.addEventListener("input", () => {
  me.name = els.name.value.trim() || "You";
  localStorage.setItem("threadline.name", me.name);
});
els.newThread.addEventListener("click", () => {
  location.hash = "#/";
  setMenu(false, false);
  els.input.focus();
});
els.attach.addEventListener("click", () => els.files.click());
window.addEventListener("hashchange", () => {
  setMenu(false, false);
  openThread(routedThread());
});

// On a phone the thread list, New thread and your name are in a drawer the menu button opens.
function setMenu(open, refocus = true) {
  if (els.app.classList.contains("menu-open") === open) return;
  els.app.classList.toggle("menu-open", open);
  els.menu.setAttribute("aria-expanded", String(open));
  if (open) els.newThread.focus();
  else if (refocus) els.menu.focus();
}
els.menu.addEventListener("click", () => setMenu(!els.app.classList.contains("menu-open")));
els.backdrop.addEventListener("click", () => setMenu(false));
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape") setMenu(false);
});

view.threadId = routedThread();
renderTitle();
connect();
