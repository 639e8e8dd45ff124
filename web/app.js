// The dashboard's entry point: routing between the pages, theme, errors.
import {parseHash} from './state.js';
import {applyTheme, toggleTheme, currentTheme} from './theme.js';
import {renderJobs} from './jobs.js';
import {renderJob} from './job.js';
import {renderCompare} from './compare.js';
import {el, debounce} from './util.js';
import {destroyAllCharts} from './charts.js';

const main = document.getElementById('main');
const errorBox = document.getElementById('errors');
let leaveHooks = [];
let generation = 0;

function report(error) {
  const message = error && error.message ? error.message : String(error);
  errorBox.replaceChildren(el('p', {}, message,
    ' ', el('button', {type: 'button', onclick: () => errorBox.replaceChildren()}, 'Dismiss')));
}

async function render() {
  for (const hook of leaveHooks) hook();
  leaveHooks = [];
  destroyAllCharts();
  const mine = ++generation;
  errorBox.replaceChildren();
  const {page, arg, params} = parseHash();
  const root = el('div', {class: 'page', dataset: {page}});
  main.replaceChildren(root);
  main.setAttribute('aria-busy', 'true');
  const ctx = {
    rerender: () => render(),
    rerenderSoon: debounce(() => { if (mine === generation) render(); }, 1000),
    onLeave: (fn) => leaveHooks.push(fn),
    report,
  };
  for (const a of document.querySelectorAll('header nav a')) {
    a.toggleAttribute('aria-current', a.dataset.page === page);
    if (a.dataset.page === page) a.setAttribute('aria-current', 'page');
  }
  try {
    if (page === 'job' && arg) {
      document.title = `${arg} · trainwatch`;
      await renderJob(root, arg, params, ctx);
    } else if (page === 'compare') {
      document.title = 'Compare · trainwatch';
      await renderCompare(root, params, ctx);
    } else {
      document.title = 'Jobs · trainwatch';
      await renderJobs(root, params, ctx);
    }
  } catch (e) {
    if (mine !== generation) return;
    root.append(el('p', {class: 'error', role: 'alert'},
      e.status === 404 ? `Not found: ${e.message}` : `Could not load this page: ${e.message}`));
  } finally {
    if (mine === generation) {
      main.setAttribute('aria-busy', 'false');
      main.dataset.ready = String(mine);
    }
  }
}

applyTheme();
const themeButton = document.getElementById('theme');
const labelTheme = () => {
  const dark = currentTheme() === 'dark';
  themeButton.setAttribute('aria-pressed', String(dark));
  themeButton.textContent = dark ? '☀ Light theme' : '☾ Dark theme';
};
labelTheme();
themeButton.addEventListener('click', () => { toggleTheme(); labelTheme(); render(); });
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => { applyTheme(); labelTheme(); render(); });
window.addEventListener('hashchange', render);
window.addEventListener('unhandledrejection', (e) => report(e.reason));
render();
document.getElementById('skip').addEventListener('click', () => main.focus());
