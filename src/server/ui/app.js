// maxkernel's web UI: plain DOM, no build step. Every value from the server is put into the page
// with textContent (never as HTML), and every state-changing request carries the CSRF token the
// login returned.
"use strict";

const state = { user: null, role: null, csrf: sessionStorage.getItem("mk_csrf") || "" };
const main = () => document.getElementById("main");

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "on") for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(method, path, body) {
  const headers = {};
  if (method !== "GET") {
    headers["X-CSRF-Token"] = state.csrf;
    headers["X-Requested-With"] = "maxkernel";  // what a trusted proxy's sessions need instead
    headers["Content-Type"] = "application/json";
  }
  const reply = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await reply.text();
  let json = null;
  try { json = JSON.parse(text); } catch (e) { json = null; }
  if (!reply.ok) {
    if (reply.status === 401 && path !== "/api/v1/login") { showLogin(); }
    throw new ApiError(reply.status, (json && json.error) || reply.statusText);
  }
  return json;
}

function seconds(s) {
  if (s === null || s === undefined) return "-";
  if (s >= 1) return s.toFixed(3) + " s";
  if (s >= 1e-3) return (s * 1e3).toFixed(3) + " ms";
  return (s * 1e6).toFixed(1) + " us";
}
function when(t) { return t ? new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19) : "-"; }
function statusCell(status) { return el("td", { class: "status-" + status }, status); }
function errorLine(message) { return el("p", { class: "error", role: "alert" }, message); }

function showLogin() {
  state.user = null;
  document.getElementById("nav").hidden = true;
  const form = document.getElementById("login-template").content.cloneNode(true);
  main().replaceChildren(form);
  document.getElementById("login").addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(event.target);
    try {
      const who = await api("POST", "/api/v1/login", { name: data.get("name"), token: data.get("token") });
      state.csrf = who.csrf_token;
      sessionStorage.setItem("mk_csrf", state.csrf);
      await loadUser();
      location.hash = "#/runs";
      route();
    } catch (e) {
      document.getElementById("login-error").textContent = e.message;
    }
  });
}

async function loadUser() {
  const who = await api("GET", "/api/v1/whoami");
  state.user = who.user;
  state.role = who.role;
  document.getElementById("nav").hidden = false;
  document.getElementById("who").textContent = who.user + " (" + who.role + ")";
  document.getElementById("nav-admin").hidden = who.role !== "admin";
}

async function runsPage() {
  const { runs } = await api("GET", "/api/v1/runs?limit=200");
  const rows = runs.map((r) => el("tr", {},
    el("td", {}, el("a", { href: "#/runs/" + r.id }, String(r.id))),
    el("td", { class: "mono" }, r.task), el("td", {}, r.mode), el("td", {}, r.target),
    statusCell(r.status), el("td", {}, seconds(r.best_median_s)),
    el("td", {}, String(r.candidates)), el("td", {}, when(r.started_at))));
  main().replaceChildren(el("h1", {}, "Runs"),
    runs.length === 0 ? el("p", { class: "muted" }, "No runs yet: `maxkernel optimize TASK` stores them here.")
      : el("table", { id: "runs" },
        el("tr", {}, ["id", "task", "mode", "target", "status", "best", "candidates", "started"].map((h) => el("th", {}, h))),
        rows));
}

async function runPage(id) {
  const run = await api("GET", "/api/v1/runs/" + encodeURIComponent(id));
  const rows = run.candidate_list.map((c) => el("tr", {},
    el("td", {}, String(c.seq)), statusCell(c.status),
    el("td", { class: "mono" }, JSON.stringify(c.schedule)),
    el("td", { class: "mono" }, c.implementation_sha256
      ? el("a", { href: "/api/v1/artifacts/" + c.implementation_sha256 }, c.implementation_sha256.slice(0, 12))
      : "-")));
  main().replaceChildren(
    el("h1", {}, "Run " + run.id),
    el("div", { class: "card" },
      el("div", {}, "task ", el("span", { class: "mono" }, run.task)),
      el("div", {}, "mode " + run.mode + ", target " + run.target + ", status " + run.status),
      el("div", {}, "best " + seconds(run.best_median_s) + " after " + run.measurements + " measurements")),
    el("h2", {}, "Candidates"),
    el("table", { id: "candidates" },
      el("tr", {}, ["seq", "status", "schedule", "implementation"].map((h) => el("th", {}, h))), rows));
}

async function adminPage() {
  const [{ users }, { tokens }, { events }] = await Promise.all([
    api("GET", "/api/v1/users"), api("GET", "/api/v1/tokens"), api("GET", "/api/v1/audit?limit=10000")]);
  const message = el("p", { class: "error", id: "admin-error" });
  const fail = (e) => { message.textContent = e.message; };
  const roles = ["viewer", "operator", "approver", "admin", "worker"];
  const userRows = users.map((u) => {
    const select = el("select", { "aria-label": "role of " + u.name, on: { change: (e) =>
      api("PUT", "/api/v1/users/" + encodeURIComponent(u.name), { role: e.target.value }).then(adminPage, fail) } },
      roles.map((r) => el("option", { value: r, selected: r === u.role }, r)));
    const toggle = el("button", { class: "plain", type: "button", on: { click: () =>
      api("PUT", "/api/v1/users/" + encodeURIComponent(u.name), { disabled: !u.disabled }).then(adminPage, fail) } },
      u.disabled ? "Enable" : "Disable");
    return el("tr", {}, el("td", {}, u.name), el("td", {}, select), el("td", {}, u.disabled ? "disabled" : "active"), el("td", {}, toggle));
  });
  const newUser = el("form", { class: "row", id: "new-user", on: { submit: (e) => {
    e.preventDefault();
    const data = new FormData(e.target);
    api("POST", "/api/v1/users", { name: data.get("name"), role: data.get("role") }).then(adminPage, fail);
  } } }, el("label", {}, "Name", el("input", { name: "name", required: true })),
    el("label", {}, "Role", el("select", { name: "role" }, roles.map((r) => el("option", { value: r }, r)))),
    el("button", { type: "submit" }, "Add user"));
  const minted = el("div", { id: "minted" });
  const newToken = el("form", { class: "row", id: "new-token", on: { submit: (e) => {
    e.preventDefault();
    const data = new FormData(e.target);
    const body = { user: data.get("user"), label: data.get("label") };
    if (data.get("ttl_days")) body.ttl_days = Number(data.get("ttl_days"));
    api("POST", "/api/v1/tokens", body).then((t) => {
      minted.replaceChildren(el("p", {}, "Token for " + t.user + " (shown once):"), el("div", { class: "secret" }, t.token));
    }, fail);
  } } }, el("label", {}, "User", el("select", { name: "user" }, users.map((u) => el("option", { value: u.name }, u.name)))),
    el("label", {}, "Label", el("input", { name: "label" })),
    el("label", {}, "Days", el("input", { name: "ttl_days", type: "number", min: "1", step: "any" })),
    el("button", { type: "submit" }, "Make token"));
  const tokenRows = tokens.map((t) => el("tr", {},
    el("td", { class: "mono" }, t.lookup_id), el("td", {}, t.user), el("td", {}, t.label),
    el("td", {}, when(t.created_at)), el("td", {}, t.expires_at ? when(t.expires_at) : "never"),
    el("td", {}, t.revoked_at ? "revoked " + when(t.revoked_at) : el("button", { class: "plain", type: "button", on: { click: () =>
      api("DELETE", "/api/v1/tokens/" + t.lookup_id).then(adminPage, fail) } }, "Revoke"))));
  const eventRows = events.slice().reverse().slice(0, 200).map((e) => el("tr", {},
    el("td", {}, String(e.id)), el("td", {}, when(e.ts)), el("td", {}, e.actor), el("td", {}, e.action),
    el("td", {}, e.subject), el("td", { class: "mono" }, JSON.stringify(e.payload))));
  main().replaceChildren(el("h1", {}, "Admin"), message,
    el("h2", {}, "Users"), el("table", { id: "users" }, el("tr", {}, ["name", "role", "state", ""].map((h) => el("th", {}, h))), userRows), newUser,
    el("h2", {}, "Tokens"), el("table", { id: "tokens" }, el("tr", {}, ["id", "user", "label", "created", "expires", ""].map((h) => el("th", {}, h))), tokenRows), newToken, minted,
    el("h2", {}, "Audit log (newest first)"), el("table", { id: "audit" }, el("tr", {}, ["id", "time", "actor", "action", "subject", "details"].map((h) => el("th", {}, h))), eventRows));
}

async function route() {
  if (!state.user) {
    try { await loadUser(); } catch (e) { return; }
  }
  const hash = location.hash || "#/runs";
  const parts = hash.slice(2).split("/");
  try {
    if (parts[0] === "runs" && parts[1]) await runPage(parts[1]);
    else if (parts[0] === "admin") await adminPage();
    else await runsPage();
  } catch (e) {
    if (e.status !== 401) main().replaceChildren(errorLine(e.message));
  }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("logout").addEventListener("click", async () => {
    try { await api("POST", "/api/v1/logout"); } catch (e) { /* the session may be gone already */ }
    sessionStorage.removeItem("mk_csrf");
    showLogin();
  });
  window.addEventListener("hashchange", route);
  route();
});
