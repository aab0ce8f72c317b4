// The console's page: asks the server for the overview every refresh
// interval and redraws; the buttons post actions with the session's CSRF
// token. Everything is written as text, never as HTML.
"use strict";

const csrf = document.querySelector('meta[name="csrf-token"]').content;
const refreshMillis = Number(document.querySelector('meta[name="refresh-millis"]').content) || 5000;

function el(tag, text, className) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (className) e.className = className;
  return e;
}

function bytes(n) {
  if (!n) return "0 B";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + " " + units[i];
}

function when(t) {
  if (!t) return "–";
  return new Date(t).toLocaleString();
}

function row(cells) {
  const tr = el("tr");
  for (const c of cells) tr.append(c instanceof Node ? c : el("td", c));
  return tr;
}

function drawSummary(ov) {
  const s = document.getElementById("summary");
  s.replaceChildren();
  s.append("State ", el("strong", ov.state || "unknown"), " · Ready ");
  if (ov.ready) {
    s.append(el("strong", ov.ready.status + " (" + ov.ready.reason + ")", ov.ready.status === "True" ? "ok" : "bad"));
  } else {
    s.append(el("strong", "not reported"));
  }
  s.append(" · Primary ", el("strong", ov.primary || "none", ov.primary ? "" : "bad"));
  s.append(" · Endpoint " + ov.endpoint + (ov.tls ? " (TLS)" : ""));
  document.getElementById("primary").textContent = ov.primary || "none";
}

function drawNodes(ov) {
  const body = document.querySelector("#nodes tbody");
  body.replaceChildren();
  for (const n of ov.nodes) {
    const healthy = el("td", n.healthy ? "yes" : "no", n.healthy ? "ok" : "bad");
    let memory = "–", clients = "–", ops = "–", lag = "–";
    if (n.answered) {
      memory = bytes(n.usedMemory) + " / " + (n.maxMemory ? bytes(n.maxMemory) : "no limit");
      clients = n.clients;
      ops = n.opsPerSec;
      if (n.role === "replica") {
        lag = (n.lagBytes ?? "?") + " B / " + (n.lagSeconds ?? "?") + " s";
      }
    } else if (n.error) {
      memory = "no answer: " + n.error;
    }
    const tr = row([n.name, n.role, healthy, memory, clients, ops, lag]);
    tr.dataset.node = n.name;
    if (n.name === ov.primary) tr.className = "primary-row";
    body.append(tr);
  }
}

function drawHistory(ov) {
  const body = document.querySelector("#history tbody");
  body.replaceChildren();
  if (ov.primaryHistory.length === 0) {
    const td = el("td", "No change of primary yet.", "muted");
    td.colSpan = 4;
    body.append(row([td]));
  }
  for (const h of ov.primaryHistory) body.append(row([when(h.time), h.from, h.to, h.reason]));
}

function drawSwitchover(ov) {
  const select = document.getElementById("switchover-target");
  const chosen = select.value;
  select.replaceChildren();
  for (const t of ov.switchoverTargets) {
    const o = el("option", t);
    o.value = t;
    select.append(o);
  }
  if (ov.switchoverTargets.includes(chosen)) select.value = chosen;
  document.getElementById("switchover").disabled = ov.switchoverTargets.length === 0;
  const last = document.getElementById("last-switchover");
  const ls = ov.lastSwitchover;
  let text = ls ? "Last switchover: " + ls.outcome + (ls.target ? " to " + ls.target : "") + (ls.message ? ": " + ls.message : "") + " (" + when(ls.time) + ")" : "No switchover asked for yet.";
  if (ov.pendingSwitchover) text += " Pending: " + ov.pendingSwitchover + ".";
  last.textContent = text;
}

function drawBackup(ov) {
  const b = ov.backup;
  const dl = document.getElementById("backup");
  dl.replaceChildren();
  const add = (k, v, className) => { dl.append(el("dt", k), el("dd", v, className)); };
  if (!b.configured) {
    add("Backups", "off: the cluster has no spec.backup");
  } else {
    add("Status", b.status || "none yet", b.status === "Failed" ? "bad" : b.status === "Succeeded" ? "ok" : "");
    add("Last success", when(b.lastSuccess));
    add("Location", b.location || "–");
    add("Last failure", b.lastFailure ? when(b.lastFailure) + ": " + (b.failureReason || "no reason given") : "–", b.lastFailure ? "bad" : "");
    add("Next due", b.nextDue ? when(b.nextDue) : "at the operator's next pass");
    add("Every", b.intervalSeconds + " s");
    if (b.pendingRequest) add("Requested", b.pendingRequest + " (not started yet)");
    if (b.lastRequest) add("Last request handled", b.lastRequest);
  }
  document.getElementById("backup-now").disabled = !b.configured;
}

async function refresh() {
  const stale = document.getElementById("stale");
  try {
    const resp = await fetch("/overview", { credentials: "same-origin", cache: "no-store" });
    if (resp.status === 401) { window.location.assign("/login"); return; }
    const body = await resp.json();
    if (!resp.ok) throw new Error(body.description || resp.statusText);
    drawSummary(body);
    drawNodes(body);
    drawHistory(body);
    drawSwitchover(body);
    drawBackup(body);
    stale.hidden = true;
  } catch (e) {
    stale.textContent = "Cannot refresh: " + e.message;
    stale.hidden = false;
  }
}

async function act(path, form) {
  const result = document.getElementById("action-result");
  result.className = "muted";
  result.textContent = "Sending…";
  try {
    const resp = await fetch(path, {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRF-Token": csrf, "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(form || {}),
    });
    if (resp.status === 401) { window.location.assign("/login"); return; }
    const body = await resp.json();
    result.className = resp.ok ? "ok" : "error";
    result.textContent = resp.ok ? body.message : "Refused (" + resp.status + "): " + body.description;
  } catch (e) {
    result.className = "error";
    result.textContent = "Failed: " + e.message;
  }
  refresh();
}

document.getElementById("backup-now").addEventListener("click", () => act("/actions/backup"));
document.getElementById("switchover-form").addEventListener("submit", (e) => {
  e.preventDefault();
  act("/actions/switchover", { node: document.getElementById("switchover-target").value });
});
document.getElementById("refresh").textContent = refreshMillis / 1000 + " s";
refresh();
setInterval(refresh, refreshMillis);
