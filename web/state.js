// Hash routing: every view's state lives in the URL (#/page/arg?key=value), so
// reloading restores it and a copied address shares it.

export function parseHash(hash = location.hash) {
  const raw = hash.replace(/^#/, '') || '/jobs';
  const [path, query = ''] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return {page: parts[0] || 'jobs', arg: parts[1], params: new URLSearchParams(query)};
}

export function hashFor(page, arg, params = {}) {
  let h = `#/${page}`;
  if (arg !== undefined) h += `/${encodeURIComponent(arg)}`;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '' || v === false) continue;
    q.set(k, v === true ? '1' : String(v));
  }
  const qs = q.toString();
  return qs ? `${h}?${qs}` : h;
}

// Changes parameters of the current view without a new page render
// (replaceState: zoom or a toggle is not a step of the back button).
export function updateParams(changes, {push = false} = {}) {
  const {page, arg, params} = parseHash();
  const merged = Object.fromEntries(params.entries());
  Object.assign(merged, changes);
  const url = hashFor(page, arg, merged);
  if (push) history.pushState(null, '', url);
  else history.replaceState(null, '', url);
}
