// Light and dark themes: the system's preference unless the user chose one
// (remembered in localStorage); charts read their colours from CSS variables.

const KEY = 'trainwatch.theme';

export function currentTheme() {
  const chosen = localStorage.getItem(KEY);
  if (chosen === 'light' || chosen === 'dark') return chosen;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export function applyTheme() {
  document.documentElement.dataset.theme = currentTheme();
}

export function toggleTheme() {
  localStorage.setItem(KEY, currentTheme() === 'dark' ? 'light' : 'dark');
  applyTheme();
}

export function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

// Distinct series colours, readable on both themes.
const PALETTE = ['#3b82f6', '#f97316', '#10b981', '#e11d48', '#8b5cf6', '#0ea5e9', '#ca8a04',
                 '#db2777', '#14b8a6', '#64748b'];
export function seriesColor(i) {
  return PALETTE[i % PALETTE.length];
}

export function withAlpha(hex, alpha) {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
}
