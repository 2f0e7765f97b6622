// Building elements without innerHTML: every piece of text from the API lands as text.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  el.append(...nodes(children));
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";

export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  el.append(...nodes(children));
  return el;
}

function setAttrs(el, attrs) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") el.setAttribute("class", value);
    else if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
}

function nodes(children) {
  return children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false)
    .map((c) => (c instanceof Node ? c : document.createTextNode(String(c))));
}

export const $ = (id) => document.getElementById(id);

const clock = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

export function timeEl(iso) {
  if (!iso) return null;
  return h("time", { datetime: iso, title: iso }, clock.format(new Date(iso)));
}

export function ago(iso) {
  if (!iso) return "never";
  const seconds = Math.max(0, (Date.now() - new Date(iso).getTime()) / 1000);
  if (seconds < 60) return "just now";
  const steps = [[60, "min"], [24, "h"], [30, "d"], [12, "mo"]];
  let value = seconds / 60;
  for (const [size, unit] of steps) {
    if (value < size) return `${Math.floor(value)} ${unit} ago`;
    value /= size;
  }
  return `${Math.floor(value)} y ago`;
}

let toastTimer = null;

export function toast(message) {
  const box = $("toast");
  box.textContent = message;
  box.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { box.hidden = true; }, 8000);
}

export function announce(message) {
  $("announce").textContent = message;
}

export const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
