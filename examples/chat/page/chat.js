// examples/chat's page: one WebSocket to /chat on the page's own host. The server's first
// message says which worker holds the socket; the first message sent is the member's name,
// every later one a line of chat. What comes back is JSON, always rendered with textContent,
// never as HTML: a name or a message cannot inject markup.
"use strict";

const $ = (id) => document.getElementById(id);
const socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/chat`);

function show(className, ...parts) {
  const item = document.createElement("li");
  item.className = className;
  for (const [part, partClass] of parts) {
    const span = document.createElement("span");
    span.textContent = part;
    if (partClass) span.className = partClass;
    item.append(span);
  }
  const log = $("log");
  const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
  log.append(item);
  if (atBottom) item.scrollIntoView({ block: "end" });
}

function setEnabled(form, enabled) {
  for (const field of form.elements) field.disabled = !enabled;
}

const handlers = {
  hello({ worker }) {
    document.body.dataset.worker = worker;
    $("status").textContent = `Connected to worker ${worker}`;
    setEnabled($("join"), true);
    $("name").focus();
  },
  welcome({ name }) {
    $("join").hidden = true;
    $("say").hidden = false;
    $("status").textContent += ` as ${name}`;
    $("text").focus();
  },
  join: ({ name }) => show("notice", [`${name} joined`]),
  leave: ({ name }) => show("notice", [`${name} left`]),
  say: ({ name, text }) => show("said", [name, "name"], [": "], [text]),
  refused({ text }) {
    show("refused", [text]);
    setEnabled($("join"), true);
  },
  bye: ({ text }) => show("notice", [text]),
};

socket.addEventListener("message", (event) => {
  const message = JSON.parse(event.data);
  handlers[message.type]?.(message);
});

socket.addEventListener("close", () => {
  $("status").textContent = "Disconnected: reload the page to join again.";
  setEnabled($("join"), false);
  setEnabled($("say"), false);
});

$("join").addEventListener("submit", (event) => {
  event.preventDefault();
  setEnabled($("join"), false);
  socket.send($("name").value);
});

$("say").addEventListener("submit", (event) => {
  event.preventDefault();
  socket.send($("text").value);
  $("text").value = "";
});
