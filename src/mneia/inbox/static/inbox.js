// The inbox's own script: single-key shortcuts (which a person can switch off, WCAG 2.1.4),
// live updates from the server's events, and where focus goes after a change.
// Loaded from this origin under script-src 'self'; it never reads item text as markup.
"use strict";

(() => {
  const STORAGE_KEY = "mneia-inbox-shortcuts";
  const typing = (element) =>
    element instanceof HTMLElement &&
    (element.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(element.tagName)) &&
    !(element instanceof HTMLInputElement && /^(checkbox|radio)$/.test(element.type));

  const entries = () => Array.from(document.querySelectorAll("#panel .entry[data-entry]"));
  const current = () => document.activeElement && document.activeElement.closest(".entry[data-entry]");

  function move(step) {
    const all = entries();
    if (all.length === 0) return;
    const at = all.indexOf(current());
    const next = at === -1 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + step));
    all[next].focus();
  }

  function press(key) {
    const entry = current();
    if (!entry) return false;
    const target = entry.querySelector(`[data-key="${key}"]`);
    if (!target) return false;
    if (target instanceof HTMLTextAreaElement) {
      target.focus();
    } else if (target instanceof HTMLInputElement && target.type === "radio") {
      target.checked = true;
      target.focus();
    } else {
      target.click();
    }
    return true;
  }

  function toggleKeys() {
    const toggle = document.getElementById("keys-toggle");
    const keys = document.getElementById("keys");
    if (!toggle || !keys) return;
    keys.hidden = !keys.hidden;
    toggle.setAttribute("aria-expanded", String(!keys.hidden));
    toggle.textContent = keys.hidden ? "Show the keys" : "Hide the keys";
  }

  function shortcutsOn() {
    const box = document.getElementById("shortcuts");
    return box instanceof HTMLInputElement && box.checked;
  }

  document.addEventListener("keydown", (event) => {
    // Escape leaves a field for its entry, where the entry's keys work again.
    if (event.key === "Escape" && typing(event.target) && current()) {
      current().focus();
      event.preventDefault();
      return;
    }
    if (!shortcutsOn() || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    let handled = true;
    if (event.key === "j") move(1);
    else if (event.key === "k") move(-1);
    else if (event.key === "?") toggleKeys();
    else if (/^[a-z0-9]$/.test(event.key)) handled = press(event.key);
    else handled = false;
    if (handled) event.preventDefault();
  });

  document.addEventListener("DOMContentLoaded", () => {
    const box = document.getElementById("shortcuts");
    if (box instanceof HTMLInputElement) {
      box.checked = localStorage.getItem(STORAGE_KEY) !== "off";
      box.addEventListener("change", () => localStorage.setItem(STORAGE_KEY, box.checked ? "on" : "off"));
    }
    const toggle = document.getElementById("keys-toggle");
    if (toggle) toggle.addEventListener("click", toggleKeys);
    listen();
  });

  // After an action, say what happened where a keyboard user is: on the message, or the entry
  // that now stands where the acted-on one stood.
  let lastIndex = -1;
  document.addEventListener("htmx:beforeRequest", () => {
    lastIndex = entries().indexOf(current());
  });
  document.addEventListener("htmx:afterSwap", (event) => {
    if (!(event.target instanceof HTMLElement) || event.target.id !== "panel") return;
    const said = document.getElementById("said");
    const all = entries();
    if (said && said.classList.contains("failed")) said.focus();
    else if (lastIndex >= 0 && all.length > 0) all[Math.min(lastIndex, all.length - 1)].focus();
    else if (said) said.focus();
    lastIndex = -1;
  });

  // A refusal (a form that expired, a session that ended) is not swapped in: say it instead.
  document.addEventListener("htmx:responseError", (event) => {
    const live = document.getElementById("live");
    const xhr = event.detail && event.detail.xhr;
    if (live && xhr) live.textContent = `Not done (${xhr.status}): ${xhr.responseText || "refused"}`;
  });

  // Live: the server sends "ready" once it listens (and again each time the browser opens a new
  // stream), then "raised" when a dispute or proposal is raised that this person can see. The
  // panel is read again at each, so nothing raised meanwhile is missed, unless the person is
  // working in it (a note written, a side chosen): then they are told, and it is read again later.
  function listen() {
    const url = document.body.dataset.events;
    if (!url || typeof EventSource === "undefined") return;
    const source = new EventSource(url);
    source.addEventListener("ready", () => refresh(() => (document.body.dataset.live = "ready")));
    source.addEventListener("raised", (event) => {
      const live = document.getElementById("live");
      if (live) live.textContent = `A ${event.data === "dispute" ? "dispute" : "proposal"} was just raised.`;
      refresh();
    });
    source.addEventListener("error", () => (document.body.dataset.live = "reconnecting"));
  }

  function busy() {
    const panel = document.getElementById("panel");
    if (!panel) return false;
    if (panel.contains(document.activeElement) && typing(document.activeElement)) return true;
    const fields = Array.from(panel.querySelectorAll("textarea, input"));
    return fields.some((field) =>
      /^(checkbox|radio)$/.test(field.type) ? field.checked : field.type !== "hidden" && field.value !== "",
    );
  }

  let pending = false;
  function refresh(then) {
    const panel = document.getElementById("panel");
    if (!panel || typeof htmx === "undefined") return;
    if (busy()) {
      pending = true;
      if (then) then();
      return;
    }
    pending = false;
    const focused = current();
    const id = focused ? focused.dataset.entry : null;
    const at = entries().indexOf(focused);
    htmx.ajax("GET", panel.dataset.panel, { target: "#panel", swap: "outerHTML" }).then(() => {
      const all = entries();
      const same = all.find((entry) => entry.dataset.entry === id);
      if (same) same.focus();
      else if (at >= 0 && all.length > 0) all[Math.min(at, all.length - 1)].focus();
      if (then) then();
    });
  }
  document.addEventListener("focusout", () => {
    if (pending) setTimeout(() => pending && !busy() && refresh(), 0);
  });
})();
