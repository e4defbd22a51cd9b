// memvault dashboard: a client of the REST API, served by this binary (src/http/dashboard.rs).
// Plain JavaScript, no framework, no build step and nothing loaded from anywhere but this server.
// Every element is built with the DOM API (textContent, never innerHTML with data), so nothing the
// API returns is ever parsed as markup.
'use strict';

(() => {
  // ----- state ---------------------------------------------------------------------------------

  const WORKSPACE_KEY = 'memvault.workspace';
  const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
  const ROLES = ['owner', 'admin', 'member', 'viewer'];
  const PLANS = ['free', 'hobby', 'pro', 'ultimate'];
  const CATEGORIES = ['preference', 'fact', 'decision', 'context'];
  const POLL_MS = 1500;

  const state = {
    user: null,
    workspaces: [],
    workspaceId: null,
    gen: 0, // bumped on every render: async work of an older view stops touching the page
    timers: new Set(),
    cleanups: [],
    firstRender: true,
  };

  // Filters of the memories list, kept while the app is open.
  const memoryFilters = {
    scope: '', project: '', category: '', search: '', includeExpired: false, limit: 20, offset: 0,
  };

  // ----- small DOM helpers ---------------------------------------------------------------------

  let idCounter = 0;
  const uid = (prefix) => `${prefix}-${++idCounter}`;

  /** Builds an element: attrs may hold `class`, `text`, `on` (events), `dataset`, and any
   *  attribute or property; children are nodes, strings, or null/false (skipped). */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    applyAttrs(el, attrs);
    append(el, children);
    return el;
  }

  function applyAttrs(el, attrs) {
    if (!attrs) return;
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') el.className = value;
      else if (key === 'text') el.textContent = value;
      else if (key === 'on') for (const [ev, fn] of Object.entries(value)) el.addEventListener(ev, fn);
      else if (key === 'dataset') Object.assign(el.dataset, value);
      else if (key in el && typeof value !== 'string') el[key] = value;
      else el.setAttribute(key, value === true ? '' : String(value));
    }
  }

  function append(el, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  function clear(el) {
    while (el.firstChild) el.removeChild(el.firstChild);
    return el;
  }

  function replace(el, ...children) {
    clear(el);
    return append(el, children);
  }

  const main = () => document.getElementById('main');

  function announce(text) {
    const region = document.getElementById('announcer');
    region.textContent = '';
    // A fresh text node is announced even when the same message repeats.
    setTimeout(() => { region.textContent = text; }, 30);
  }

  function formatDate(value) {
    if (!value) return '';
    const date = new Date(value);
    return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString();
  }

  function plural(n, one, many) {
    return `${n} ${n === 1 ? one : (many || `${one}s`)}`;
  }

  // States every view uses: loading, empty, error (with the API's `error` text).
  const loading = (text) => h('p', { class: 'state loading', role: 'status', text: text || 'Loading…' });
  const empty = (text) => h('p', { class: 'state empty', text });
  function errorBox(error, prefix) {
    const message = error && error.message ? error.message : String(error);
    return h('p', { class: 'state error', role: 'alert' },
      prefix ? h('strong', { text: `${prefix}: ` }) : null, message);
  }
  const note = (text, cls) => h('p', { class: `note ${cls || ''}`.trim(), text });

  function badge(text, cls) {
    return h('span', { class: `badge ${cls || ''}`.trim(), text });
  }

  /** A labelled form control; returns the wrapper, the control is `.control`. */
  function field(label, control, hint) {
    const id = control.id || uid('f');
    control.id = id;
    const hintEl = hint ? h('span', { class: 'hint', id: `${id}-hint`, text: hint }) : null;
    if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
    const wrapper = h('div', { class: 'field' }, h('label', { for: id, text: label }), control, hintEl);
    wrapper.control = control;
    return wrapper;
  }

  const input = (attrs) => h('input', Object.assign({ type: 'text' }, attrs));

  function select(name, options, value) {
    const el = h('select', { name });
    for (const option of options) {
      const [v, label] = Array.isArray(option) ? option : [option, option];
      el.append(h('option', { value: v, text: label, selected: v === value }));
    }
    return el;
  }

  function button(text, onClick, cls, attrs) {
    return h('button', Object.assign({ type: 'button', class: `button ${cls || ''}`.trim(), text, on: { click: onClick } }, attrs || {}));
  }

  /** A form whose submit runs `handler(form)`; the submit button is disabled meanwhile, and an
   *  error (the API's message) is shown in the form's alert region. */
  function form(attrs, children, handler) {
    const errors = h('div', { class: 'form-errors' });
    const el = h('form', Object.assign({ novalidate: false }, attrs), children, errors);
    el.addEventListener('submit', async (event) => {
      event.preventDefault();
      const submit = el.querySelector('button[type=submit]');
      clear(errors);
      if (submit) submit.disabled = true;
      el.setAttribute('aria-busy', 'true');
      try {
        await handler(el);
      } catch (error) {
        replace(errors, errorBox(error));
      } finally {
        if (submit) submit.disabled = false;
        el.removeAttribute('aria-busy');
      }
    });
    el.errors = errors;
    return el;
  }

  /** A button that asks first: "Delete" becomes "Delete? [Yes, delete] [Cancel]". */
  function confirmButton(label, question, confirmLabel, action, attrs) {
    const wrapper = h('span', { class: 'confirm' });
    const start = button(label, () => {
      const yes = button(confirmLabel, async () => {
        yes.disabled = true;
        try {
          await action();
        } catch (error) {
          replace(wrapper, errorBox(error), start);
          start.focus();
        }
      }, 'danger');
      const no = button('Cancel', () => { replace(wrapper, start); start.focus(); }, 'subtle');
      replace(wrapper, h('span', { class: 'question', text: question }), yes, no);
      yes.focus();
    }, 'subtle danger-text', attrs);
    wrapper.append(start);
    return wrapper;
  }

  async function copyText(text) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (_) {
      const area = h('textarea', { readonly: true, class: 'offscreen' });
      area.value = text;
      document.body.append(area);
      area.select();
      let ok = false;
      try { ok = document.execCommand('copy'); } catch (_) { ok = false; }
      area.remove();
      return ok;
    }
  }

  /** A value shown once, with a Copy button. */
  function secretBox(title, value, testId, extra) {
    const code = h('code', { class: 'secret-value', text: value, dataset: { testid: testId } });
    const status = h('span', { class: 'copy-status', role: 'status' });
    const copy = button('Copy', async () => {
      const ok = await copyText(value);
      status.textContent = ok ? 'Copied' : 'Copy failed: select the text and copy it';
      announce(status.textContent);
    }, 'primary');
    return h('div', { class: 'secret', role: 'region', 'aria-label': title },
      h('p', { class: 'secret-title' }, h('strong', { text: title })),
      h('div', { class: 'secret-row' }, code, copy, status),
      extra || null);
  }

  // ----- the API -------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, message, body) {
      super(message);
      this.status = status;
      this.body = body;
    }
  }

  /** Calls the API from this origin with the session cookie. Errors carry the API's `error`. */
  async function api(method, path, options) {
    const { query, body, formData } = options || {};
    const url = new URL(path, window.location.origin);
    for (const [key, value] of Object.entries(query || {})) {
      if (value !== undefined && value !== null && value !== '') url.searchParams.set(key, String(value));
    }
    const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
    if (formData) init.body = formData;
    else if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(url, init);
    } catch (error) {
      throw new ApiError(0, `the server could not be reached (${error.message})`);
    }
    const text = await response.text();
    let data = null;
    if (text) {
      try { data = JSON.parse(text); } catch (_) { data = null; }
    }
    if (!response.ok) {
      const message = data && data.error ? data.error : `${response.status} ${response.statusText}`;
      if (response.status === 401 && state.user && !path.startsWith('/api/auth/')) {
        // The session ended (signed out elsewhere, expired): back to the sign-in view.
        state.user = null;
        setTimeout(() => navigate(`/app/sign-in?next=${encodeURIComponent(currentPath())}`, true), 0);
      }
      throw new ApiError(response.status, message, data);
    }
    return { status: response.status, data };
  }

  const get = (path, query) => api('GET', path, { query });

  // ----- workspaces and roles ------------------------------------------------------------------

  function workspace() {
    return state.workspaces.find((w) => w.id === state.workspaceId) || null;
  }
  const role = () => (workspace() ? workspace().role : 'viewer');
  const canWrite = () => ['owner', 'admin', 'member'].includes(role());
  const canManage = () => ['owner', 'admin'].includes(role());
  const isOwner = () => role() === 'owner';
  const wsId = () => state.workspaceId;

  function setWorkspaces(list, preferred) {
    state.workspaces = list || [];
    let stored = null;
    try { stored = window.localStorage.getItem(WORKSPACE_KEY); } catch (_) { stored = null; }
    const pick = [preferred, state.workspaceId, stored].find((id) => id && state.workspaces.some((w) => w.id === id));
    state.workspaceId = pick || (state.workspaces[0] ? state.workspaces[0].id : null);
    rememberWorkspace();
    renderChrome();
  }

  function rememberWorkspace() {
    try {
      if (state.workspaceId) window.localStorage.setItem(WORKSPACE_KEY, state.workspaceId);
    } catch (_) { /* storage may be disabled: the choice lasts for this page only */ }
  }

  async function refreshWorkspaces(preferred) {
    const { data } = await get('/api/workspaces');
    setWorkspaces(data.workspaces, preferred);
  }

  function renderChrome() {
    const bar = document.getElementById('topbar');
    bar.hidden = !state.user;
    document.getElementById('public-bar').hidden = Boolean(state.user);
    if (!state.user) return;
    document.getElementById('user-email').textContent = state.user.email;
    const switcher = document.getElementById('workspace-select');
    clear(switcher);
    for (const w of state.workspaces) {
      switcher.append(h('option', { value: w.id, text: w.name, selected: w.id === state.workspaceId }));
    }
    switcher.disabled = state.workspaces.length === 0;
    const roleBadge = document.getElementById('role-badge');
    roleBadge.textContent = workspace() ? workspace().role : '';
    roleBadge.title = 'Your role in this workspace';
  }

  function markNav(name) {
    for (const link of document.querySelectorAll('.mainnav a')) {
      if (link.dataset.nav === name) {
        link.setAttribute('aria-current', 'page');
        // On a narrow screen the menu scrolls sideways: keep the current page's entry in view.
        const nav = link.parentElement;
        if (link.offsetLeft < nav.scrollLeft || link.offsetLeft + link.offsetWidth > nav.scrollLeft + nav.clientWidth) {
          nav.scrollLeft = link.offsetLeft - 16;
        }
      } else {
        link.removeAttribute('aria-current');
      }
    }
  }

  // ----- routing -------------------------------------------------------------------------------

  const currentPath = () => window.location.pathname + window.location.search;

  function navigate(path, replaceEntry) {
    if (replaceEntry) window.history.replaceState(null, '', path);
    else window.history.pushState(null, '', path);
    render();
  }

  /** `next` after signing in: only a path of this app. */
  function safeNext(value) {
    return value && value.startsWith('/app/') && !value.startsWith('//') ? value : '/app/memories';
  }

  const ROUTES = [
    { re: /^\/app\/?$/, view: () => navigate('/app/memories', true), auth: true },
    { re: /^\/app\/sign-in\/?$/, view: () => viewAuth('sign-in'), auth: false },
    { re: /^\/app\/sign-up\/?$/, view: () => viewAuth('sign-up'), auth: false },
    { re: /^\/app\/invitations\/([^/]+)\/?$/, view: (m) => viewInvitation(decodeURIComponent(m[1])), auth: null },
    { re: /^\/app\/memories\/?$/, view: viewMemories, auth: true, nav: 'memories' },
    { re: /^\/app\/search\/?$/, view: viewSearch, auth: true, nav: 'search' },
    { re: /^\/app\/vault\/?$/, view: viewVault, auth: true, nav: 'vault' },
    { re: /^\/app\/vault\/([^/]+)\/?$/, view: (m) => viewDocument(decodeURIComponent(m[1])), auth: true, nav: 'vault' },
    { re: /^\/app\/graph\/?$/, view: viewGraph, auth: true, nav: 'graph' },
    { re: /^\/app\/settings\/?$/, view: () => navigate('/app/settings/keys', true), auth: true },
    { re: /^\/app\/settings\/keys\/?$/, view: viewKeys, auth: true, nav: 'keys' },
    { re: /^\/app\/settings\/team\/?$/, view: viewTeam, auth: true, nav: 'team' },
    { re: /^\/app\/subscription\/?$/, view: viewSubscription, auth: true, nav: 'subscription' },
  ];

  function render() {
    state.gen += 1;
    for (const timer of state.timers) clearTimeout(timer);
    state.timers.clear();
    for (const cleanup of state.cleanups.splice(0)) cleanup();
    const path = window.location.pathname;
    const route = ROUTES.find((r) => r.re.test(path));
    renderChrome();
    if (!route) {
      markNav(null);
      const view = mount('Page not found');
      view.append(note(`Nothing here at ${path}.`), h('p', {}, h('a', { href: '/app/memories', dataset: { link: '' }, text: 'Go to your memories' })));
      return;
    }
    if (route.auth === true && !state.user) {
      navigate(`/app/sign-in?next=${encodeURIComponent(currentPath())}`, true);
      return;
    }
    if (route.auth === false && state.user) {
      navigate(safeNext(new URLSearchParams(window.location.search).get('next')), true);
      return;
    }
    markNav(route.nav || null);
    route.view(path.match(route.re));
  }

  /** Clears the page for a view: its title and heading; returns the view's container. */
  function mount(title, subtitle) {
    document.title = `${title} · memvault`;
    const root = clear(main());
    const heading = h('h1', { tabindex: '-1', text: title });
    root.append(h('div', { class: 'page-head' }, heading, subtitle ? h('p', { class: 'subtitle', text: subtitle }) : null));
    const view = h('div', { class: 'view' });
    root.append(view);
    if (!state.firstRender) heading.focus();
    state.firstRender = false;
    return view;
  }

  /** Runs `fn` later unless the view changed meanwhile. */
  function later(fn, ms) {
    const gen = state.gen;
    const timer = setTimeout(() => {
      state.timers.delete(timer);
      if (gen === state.gen) fn();
    }, ms);
    state.timers.add(timer);
  }

  function live(gen) {
    return gen === state.gen;
  }

  function needWorkspace(view) {
    if (state.workspaceId) return true;
    view.append(empty('You are not a member of any workspace. Create one under Members, or accept an invitation.'));
    return false;
  }

  // ----- sign in, sign up, sign out ------------------------------------------------------------

  function viewAuth(mode) {
    markNav(null);
    const signUp = mode === 'sign-up';
    const next = safeNext(new URLSearchParams(window.location.search).get('next'));
    const view = mount(signUp ? 'Create your account' : 'Sign in to memvault',
      signUp ? 'You get a workspace of your own; teammates can invite you to theirs.' : null);
    view.classList.add('narrow');
    if (next.startsWith('/app/invitations/')) {
      view.append(note('Sign in (or create an account) with the email address the invitation was sent to, then accept it.', 'info'));
    }
    const name = signUp ? field('Name', input({ name: 'name', autocomplete: 'name', maxlength: 100 })) : null;
    const email = field('Email', input({ type: 'email', name: 'email', autocomplete: 'email', required: true }));
    const password = field('Password', input({
      type: 'password', name: 'password', required: true, minlength: signUp ? 8 : null, maxlength: 128,
      autocomplete: signUp ? 'new-password' : 'current-password',
    }), signUp ? '8 to 128 characters.' : null);
    const submitLabel = signUp ? 'Create account' : 'Sign in';
    const f = form({ class: 'card stack', 'aria-label': submitLabel }, [
      name, email, password,
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary', text: submitLabel })),
    ], async () => {
      const body = { email: email.control.value, password: password.control.value };
      if (signUp && name.control.value.trim()) body.name = name.control.value.trim();
      const { data } = await api('POST', signUp ? '/api/auth/sign-up' : '/api/auth/sign-in', { body });
      state.user = data.user;
      setWorkspaces(data.workspaces);
      announce(signUp ? 'Account created' : 'Signed in');
      navigate(next, true);
    });
    const other = signUp
      ? h('p', {}, 'Already have an account? ', h('a', { href: `/app/sign-in?next=${encodeURIComponent(next)}`, dataset: { link: '' }, text: 'Sign in' }))
      : h('p', {}, 'New here? ', h('a', { href: `/app/sign-up?next=${encodeURIComponent(next)}`, dataset: { link: '' }, text: 'Create an account' }));
    view.append(f, other);
    (signUp ? name.control : email.control).focus();
  }

  async function signOut() {
    try {
      await api('POST', '/api/auth/sign-out');
    } catch (error) {
      if (error.status !== 401) {
        announce(`Sign-out failed: ${error.message}`);
        return;
      }
    }
    state.user = null;
    state.workspaces = [];
    state.workspaceId = null;
    announce('Signed out');
    navigate('/app/sign-in', true);
  }

  // ----- memories ------------------------------------------------------------------------------

  function memoryMeta(m) {
    return h('div', { class: 'meta' },
      badge(m.category, `cat-${m.category}`),
      badge(`source: ${m.source}`, 'source'),
      m.version > 1 ? badge(`v${m.version}`) : null,
      m.scope ? badge(`scope: ${m.scope}`) : null,
      m.project ? badge(`project: ${m.project}`) : null,
      m.score !== undefined ? badge(`score ${(m.score * 100).toFixed(0)}%`, 'score') : null,
      h('time', { datetime: m.createdAt, text: formatDate(m.createdAt) }),
      m.validUntil ? h('span', { class: 'muted', text: `valid until ${formatDate(m.validUntil)}` }) : null);
  }

  /** A memory card with history, edit and delete. `onChange` reloads the list. */
  function memoryCard(m, onChange) {
    const panel = h('div', { class: 'panel-slot' });
    const scopeQuery = { scope: m.scope || undefined, workspaceId: wsId() };
    const content = h('p', { class: 'content', text: m.content });
    const actions = h('div', { class: 'actions' });
    const card = h('article', { class: 'card memory', dataset: { id: m.id } }, content, memoryMeta(m), actions, panel);

    const historyButton = button('History', async () => {
      if (panel.dataset.open === 'history') { clear(panel); panel.dataset.open = ''; historyButton.setAttribute('aria-expanded', 'false'); return; }
      panel.dataset.open = 'history';
      historyButton.setAttribute('aria-expanded', 'true');
      replace(panel, loading('Loading history…'));
      try {
        const { data } = await get(`/api/memories/${m.id}/history`, scopeQuery);
        const versions = [data.current, ...data.history];
        replace(panel, h('div', { class: 'history' },
          h('h3', { text: `History (${plural(versions.length, 'version')})` }),
          h('ol', { class: 'versions' }, versions.map((v, i) => h('li', {},
            h('span', { class: 'version-label', text: `v${v.version}${i === 0 ? ' (current)' : ''}` }), ' ',
            h('time', { datetime: v.createdAt, text: formatDate(v.createdAt) }),
            h('p', { text: v.content }))))));
      } catch (error) {
        replace(panel, errorBox(error, 'Could not load the history'));
      }
    }, 'subtle', { 'aria-expanded': 'false' });
    actions.append(historyButton);

    if (canWrite()) {
      const editButton = button('Edit', () => {
        if (panel.dataset.open === 'edit') { clear(panel); panel.dataset.open = ''; return; }
        panel.dataset.open = 'edit';
        const text = h('textarea', { name: 'content', rows: 3, maxlength: 10000, required: true });
        text.value = m.content;
        const category = select('category', CATEGORIES, m.category);
        const project = input({ name: 'project', value: m.project || '', maxlength: 100 });
        const f = form({ class: 'edit-form stack', 'aria-label': 'Edit memory' }, [
          field('Content', text, 'Changing the content makes a new version; the old one stays in the history.'),
          h('div', { class: 'grid' }, field('Category', category), field('Project', project)),
          h('div', { class: 'actions' },
            h('button', { type: 'submit', class: 'button primary', text: 'Save changes' }),
            button('Cancel', () => { clear(panel); panel.dataset.open = ''; editButton.focus(); }, 'subtle')),
        ], async () => {
          const body = { workspaceId: wsId() };
          if (text.value !== m.content) body.content = text.value;
          if (category.value !== m.category) body.category = category.value;
          if ((project.value.trim() || null) !== (m.project || null)) body.project = project.value.trim() || null;
          if (Object.keys(body).length === 1) {
            replace(f.errors, note('Nothing changed.'));
            return;
          }
          await api('PATCH', `/api/memories/${m.id}`, { query: scopeQuery, body });
          announce('Memory updated');
          onChange();
        });
        replace(panel, f);
        text.focus();
      }, 'subtle');
      actions.append(editButton);
      actions.append(confirmButton('Delete', 'Delete this memory?', 'Yes, delete', async () => {
        await api('DELETE', `/api/memories/${m.id}`, { query: scopeQuery });
        announce('Memory deleted');
        onChange();
      }));
    }
    return card;
  }

  function viewMemories() {
    const view = mount('Memories', 'What your assistants remember in this workspace, newest first.');
    if (!needWorkspace(view)) return;
    const gen = state.gen;
    const listArea = h('div', { class: 'list-area', 'aria-live': 'polite' });

    if (canWrite()) view.append(saveForm(() => load()));
    else view.append(note(`Your role (${role()}) may read memories but not save or change them.`, 'info'));

    // Filters: the list endpoint's own (scope, project, category, text, paging).
    const f = memoryFilters;
    const scope = input({ name: 'scope', value: f.scope, maxlength: 200, placeholder: 'unscoped' });
    const project = input({ name: 'project', value: f.project, maxlength: 100, placeholder: 'any' });
    const category = select('category', [['', 'Any'], ...CATEGORIES], f.category);
    const search = input({ type: 'search', name: 'search', value: f.search, maxlength: 200 });
    const expired = h('input', { type: 'checkbox', name: 'includeExpired', checked: f.includeExpired });
    const limit = select('limit', ['10', '20', '50', '100'], String(f.limit));
    const filters = form({ class: 'filters card', 'aria-label': 'Filter memories' }, [
      h('h2', { text: 'Browse' }),
      h('div', { class: 'grid' },
        field('Scope', scope, 'Blank: the unscoped lane.'),
        field('Project', project, 'Comma-separated.'),
        field('Category', category),
        field('Content contains', search),
        field('Per page', limit)),
      h('div', { class: 'actions' },
        h('label', { class: 'checkbox' }, expired, ' Include expired'),
        h('button', { type: 'submit', class: 'button primary', text: 'Apply filters' }),
        button('Reset', () => {
          Object.assign(memoryFilters, { scope: '', project: '', category: '', search: '', includeExpired: false, limit: 20, offset: 0 });
          render();
        }, 'subtle')),
    ], async () => {
      Object.assign(memoryFilters, {
        scope: scope.value.trim(), project: project.value.trim(), category: category.value,
        search: search.value.trim(), includeExpired: expired.checked, limit: Number(limit.value), offset: 0,
      });
      await load();
    });
    view.append(filters, listArea);

    async function load() {
      replace(listArea, loading('Loading memories…'));
      try {
        const { data } = await get('/api/memories', {
          workspaceId: wsId(), scope: f.scope, project: f.project, category: f.category, search: f.search,
          includeExpired: f.includeExpired ? 'true' : undefined, limit: f.limit, offset: f.offset,
        });
        if (!live(gen)) return;
        if (data.memories.length === 0) {
          replace(listArea, empty(f.offset > 0 ? 'No memories on this page.' : 'No memories match these filters yet.'));
          if (f.offset > 0) listArea.append(pager(data));
          return;
        }
        replace(listArea,
          h('p', { class: 'count', text: `Showing ${f.offset + 1}–${f.offset + data.memories.length} of ${data.total}` }),
          h('div', { class: 'cards' }, data.memories.map((m) => memoryCard(m, load))),
          pager(data));
      } catch (error) {
        if (live(gen)) replace(listArea, errorBox(error, 'Could not load memories'));
      }
    }

    function pager(data) {
      const prev = button('Previous page', () => { f.offset = Math.max(0, f.offset - f.limit); load(); }, 'subtle', { disabled: f.offset === 0 });
      const next = button('Next page', () => { f.offset += f.limit; load(); }, 'subtle', { disabled: !data.hasMore });
      return h('nav', { class: 'pager', 'aria-label': 'Pages' }, prev, next);
    }

    load();
  }

  function saveForm(onSaved) {
    const content = h('textarea', { name: 'content', rows: 3, maxlength: 10000, required: true });
    const category = select('category', [['', 'Infer from the wording'], ...CATEGORIES], '');
    const scope = input({ name: 'scope', maxlength: 200, value: memoryFilters.scope });
    const project = input({ name: 'project', maxlength: 100 });
    const result = h('div', { class: 'save-result', role: 'status' });
    const f = form({ class: 'card stack save-form', 'aria-label': 'Save a memory' }, [
      h('h2', { text: 'Save a memory' }),
      field('Memory', content, 'A short fact, preference, decision or context. Notes over 1,000 characters are split into several memories.'),
      h('div', { class: 'grid' }, field('Category', category), field('Scope', scope, 'Blank: the unscoped lane.'), field('Project', project)),
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary', text: 'Save memory' })),
      result,
    ], async () => {
      clear(result);
      const body = { content: content.value, workspaceId: wsId() };
      if (category.value) body.category = category.value;
      if (scope.value.trim()) body.scope = scope.value.trim();
      if (project.value.trim()) body.project = project.value.trim();
      const { status, data } = await api('POST', '/api/memories', { body });
      if (status === 202) {
        replace(result, note(`Long note accepted: it is being split into memories (job ${data.jobId}).`, 'info'));
        watchJob(data.jobId, result, onSaved);
      } else {
        const said = {
          created: 'Saved.',
          duplicate: 'Already known: an identical memory exists, nothing new was stored.',
          superseded: `Saved as version ${data.memory.version} of an earlier memory (the old one stays in its history).`,
        }[data.status] || `Saved (${data.status}).`;
        replace(result, note(said, 'success'));
        content.value = '';
      }
      announce('Memory saved');
      onSaved();
    });
    return f;
  }

  function watchJob(jobId, where, onDone) {
    const check = async () => {
      try {
        const { data } = await get(`/api/memories/jobs/${jobId}`, { workspaceId: wsId() });
        if (data.state === 'completed' || data.state === 'failed') {
          const saved = (data.memories || []).filter((p) => p.memory).length;
          replace(where, note(data.state === 'completed'
            ? `Long note done: ${plural(saved, 'memory', 'memories')} from ${plural((data.memories || []).length, 'part')}.`
            : `The long note failed: ${data.error || 'unknown error'}`, data.state === 'completed' ? 'success' : 'error'));
          onDone();
          return;
        }
        later(check, POLL_MS);
      } catch (error) {
        replace(where, errorBox(error, 'Could not follow the job'));
      }
    };
    later(check, POLL_MS);
  }

  // ----- search --------------------------------------------------------------------------------

  function viewSearch() {
    const view = mount('Search memories', 'Keywords and meaning together: finds "I moved to Berlin" for "where do I live".');
    if (!needWorkspace(view)) return;
    const gen = state.gen;
    const params = new URLSearchParams(window.location.search);
    const q = input({ type: 'search', name: 'q', required: true, maxlength: 1000, value: params.get('q') || '' });
    const mode = select('mode', [['hybrid', 'Hybrid (keywords + meaning)'], ['keyword', 'Keywords only'], ['semantic', 'Meaning only']], params.get('mode') || 'hybrid');
    const scope = input({ name: 'scope', maxlength: 200, value: params.get('scope') || '' });
    const project = input({ name: 'project', maxlength: 100, value: params.get('project') || '' });
    const category = select('category', [['', 'Any'], ...CATEGORIES], params.get('category') || '');
    const limit = input({ type: 'number', name: 'limit', min: 1, max: 50, value: params.get('limit') || '10' });
    const results = h('div', { class: 'list-area', 'aria-live': 'polite' });
    const f = form({ class: 'card stack', role: 'search', 'aria-label': 'Search memories' }, [
      field('Query', q),
      h('div', { class: 'grid' }, field('Mode', mode), field('Scope', scope, 'Blank: the unscoped lane.'), field('Project', project), field('Category', category), field('Results', limit)),
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary', text: 'Search' })),
    ], async () => {
      const query = { q: q.value.trim(), mode: mode.value, scope: scope.value.trim(), project: project.value.trim(), category: category.value, limit: limit.value };
      const search = new URLSearchParams(Object.entries(query).filter(([, v]) => v));
      window.history.replaceState(null, '', `/app/search?${search}`);
      await run(query);
    });
    view.append(f, results);

    async function run(query) {
      replace(results, loading('Searching…'));
      try {
        const { data } = await get('/api/memories/search', Object.assign({ workspaceId: wsId() }, query));
        if (!live(gen)) return;
        if (data.results.length === 0) {
          replace(results, empty(`Nothing found for “${query.q}”.`));
          return;
        }
        replace(results,
          h('p', { class: 'count', text: `${plural(data.total, 'result')}, best first` }),
          h('div', { class: 'cards' }, data.results.map((m) => memoryCard(m, () => run(query)))));
      } catch (error) {
        if (live(gen)) replace(results, errorBox(error, 'Search failed'));
      }
    }

    if (q.value.trim()) f.requestSubmit();
    else q.focus();
  }

  // ----- Context Vault -------------------------------------------------------------------------

  function statusBadge(status) {
    return badge(status, `status status-${status}`);
  }

  /** Status, phase, progress bar and attempts of a document. */
  function documentProgress(doc) {
    const total = doc.totalChunks || 0;
    const done = Math.min(doc.processedChunks || 0, total);
    const percent = doc.status === 'completed' ? 100 : (total > 0 ? Math.round((done / total) * 100) : 0);
    const bar = h('div', {
      class: `progress ${doc.status === 'completed' ? 'done' : ''}`.trim(), role: 'progressbar',
      'aria-valuemin': '0', 'aria-valuemax': '100', 'aria-valuenow': String(percent),
      'aria-label': `Progress of ${doc.title}`,
      'aria-valuetext': total > 0 ? `${done} of ${total} chunks processed` : `${percent}%`,
    }, h('div', { class: 'progress-fill' }));
    bar.firstChild.style.width = `${percent}%`;
    return h('div', { class: 'doc-progress' },
      h('div', { class: 'meta' },
        statusBadge(doc.status),
        doc.processingPhase && !TERMINAL.has(doc.status) ? badge(`phase: ${doc.processingPhase}`, 'phase') : null,
        h('span', { class: 'chunks', text: total > 0 ? `${done}/${total} chunks` : 'no chunks yet' }),
        h('span', { class: 'attempts', text: `attempts: ${doc.attempts}` })),
      bar,
      doc.error ? h('p', { class: 'state error', role: 'alert', text: doc.error }) : null);
  }

  /** A document's page: its scope goes along (a document is found only in its own scope). */
  function documentHref(doc) {
    return doc.scope ? `/app/vault/${doc.id}?scope=${encodeURIComponent(doc.scope)}` : `/app/vault/${doc.id}`;
  }

  function documentActions(doc, onChange, withLink) {
    const actions = h('div', { class: 'actions' });
    if (withLink) actions.append(h('a', { class: 'button subtle', href: documentHref(doc), dataset: { link: '' }, text: 'Cited memories', 'aria-label': `Cited memories of ${doc.title}` }));
    if (canWrite()) {
      if (['pending', 'processing', 'retrying'].includes(doc.status)) {
        actions.append(button('Cancel', async (event) => {
          event.target.disabled = true;
          try {
            await api('POST', `/api/context-vault/documents/${doc.id}/cancel`, { query: { workspaceId: wsId(), scope: doc.scope || '' } });
            announce(`Cancelled ${doc.title}`);
          } catch (error) {
            actions.append(errorBox(error));
          }
          onChange();
        }, 'subtle'));
      }
      if (['failed', 'cancelled'].includes(doc.status)) {
        actions.append(button('Retry', async (event) => {
          event.target.disabled = true;
          try {
            await api('POST', `/api/context-vault/documents/${doc.id}/retry`, { query: { workspaceId: wsId(), scope: doc.scope || '' } });
            announce(`Retrying ${doc.title}`);
          } catch (error) {
            actions.append(errorBox(error));
          }
          onChange();
        }, 'subtle'));
      }
      actions.append(confirmButton('Delete', 'Delete this document and the memories only it cites?', 'Yes, delete', async () => {
        const { data } = await api('DELETE', `/api/context-vault/documents/${doc.id}`, { query: { workspaceId: wsId(), scope: doc.scope || '' } });
        announce(`Deleted: ${data.deletedMemoryCount} memories removed, ${data.preservedMemoryCount} kept`);
        onChange(true);
      }));
    }
    return actions;
  }

  function viewVault() {
    const view = mount('Context Vault', 'Documents become cited memories: parse, OCR, chunk, embed, extract.');
    if (!needWorkspace(view)) return;
    const gen = state.gen;
    const listArea = h('div', { class: 'list-area' });
    const paging = { offset: 0, limit: 20 };
    // Documents are listed one scope at a time (scope is a wall); empty = unscoped.
    const scopeFilter = input({ name: 'documents-scope', maxlength: 200, placeholder: 'unscoped',
      value: new URLSearchParams(window.location.search).get('scope') || '' });
    const showScope = (value) => {
      scopeFilter.value = value;
      paging.offset = 0;
      listEl = null;
      rows.clear();
      refresh();
    };
    scopeFilter.addEventListener('change', () => showScope(scopeFilter.value.trim()));
    if (canWrite()) view.append(uploadPanel((scope) => (scope !== scopeFilter.value.trim() ? showScope(scope) : refresh())));
    else view.append(note(`Your role (${role()}) may read documents but not upload or change them.`, 'info'));
    view.append(h('h2', { text: 'Documents' }),
      h('div', { class: 'filters' }, field('Scope', scopeFilter, 'Documents of one scope; empty for unscoped documents.')),
      listArea);
    const rows = new Map();
    let listEl = null;

    async function refresh() {
      if (!listEl) replace(listArea, loading('Loading documents…'));
      try {
        const { data } = await get('/api/context-vault/documents', { workspaceId: wsId(), scope: scopeFilter.value.trim(), limit: paging.limit, offset: paging.offset });
        if (!live(gen)) return;
        draw(data);
        if (data.documents.some((d) => !TERMINAL.has(d.status))) later(refresh, POLL_MS);
      } catch (error) {
        if (!live(gen)) return;
        listEl = null;
        rows.clear();
        replace(listArea, errorBox(error, 'Could not load documents'), button('Try again', refresh, 'subtle'));
      }
    }

    function draw(data) {
      if (data.documents.length === 0) {
        listEl = null;
        rows.clear();
        replace(listArea, empty('No documents yet. Drop a PDF, DOCX, spreadsheet, Markdown, HTML, text or image file above.'));
        return;
      }
      if (!listEl) {
        listEl = h('ul', { class: 'cards documents', 'aria-label': 'Documents' });
        replace(listArea, listEl);
      }
      const seen = new Set();
      let previous = null;
      for (const doc of data.documents) {
        seen.add(doc.id);
        let row = rows.get(doc.id);
        const signature = JSON.stringify([doc.status, doc.processingPhase, doc.processedChunks, doc.totalChunks, doc.attempts, doc.error, role()]);
        if (!row) {
          row = { el: h('li', { class: 'card document', dataset: { id: doc.id } }), signature: null };
          rows.set(doc.id, row);
        }
        if (row.signature !== signature) {
          row.signature = signature;
          // Keep focus on a button that survives the update (cancel, retry, delete).
          const focused = row.el.contains(document.activeElement) ? document.activeElement.textContent : null;
          replace(row.el,
            h('div', { class: 'doc-head' },
              h('a', { class: 'doc-title', href: documentHref(doc), dataset: { link: '' }, text: doc.title }),
              h('span', { class: 'muted', text: `${doc.sourceType} · ${formatDate(doc.createdAt)}` })),
            documentProgress(doc),
            documentActions(doc, refresh, true));
          if (focused) {
            const again = Array.from(row.el.querySelectorAll('button, a')).find((b) => b.textContent === focused);
            if (again) again.focus();
          }
          row.el.dataset.status = doc.status;
        }
        const expectedNext = previous ? previous.nextSibling : listEl.firstChild;
        if (expectedNext !== row.el) listEl.insertBefore(row.el, expectedNext);
        previous = row.el;
      }
      for (const [id, row] of rows) {
        if (!seen.has(id)) { row.el.remove(); rows.delete(id); }
      }
      let pagerEl = listArea.querySelector('.pager');
      if (pagerEl) pagerEl.remove();
      if (data.total > paging.limit) {
        pagerEl = h('nav', { class: 'pager', 'aria-label': 'Pages' },
          button('Previous page', () => { paging.offset = Math.max(0, paging.offset - paging.limit); refresh(); }, 'subtle', { disabled: paging.offset === 0 }),
          h('span', { class: 'muted', text: `${paging.offset + 1}–${paging.offset + data.documents.length} of ${data.total}` }),
          button('Next page', () => { paging.offset += paging.limit; refresh(); }, 'subtle', { disabled: !data.hasMore }));
        listArea.append(pagerEl);
      }
    }

    refresh();
  }

  function uploadPanel(onUploaded) {
    const fileInput = h('input', { type: 'file', name: 'file', multiple: true, class: 'file-input' });
    const fileId = uid('file');
    fileInput.id = fileId;
    const title = input({ name: 'title', maxlength: 300 });
    const scope = input({ name: 'scope', maxlength: 200 });
    const project = input({ name: 'project', maxlength: 100 });
    const log = h('ul', { class: 'upload-log', 'aria-live': 'polite' });
    const zone = h('div', { class: 'dropzone', dataset: { testid: 'dropzone' } },
      h('p', { class: 'drop-text', text: 'Drag and drop files here' }),
      h('p', { class: 'muted', text: 'or' }),
      h('label', { for: fileId, class: 'button primary file-label', text: 'Choose files…' }),
      fileInput,
      h('p', { class: 'hint', text: 'PDF, DOCX, XLSX/XLS/ODS, CSV, Markdown, HTML, text or images; up to the server’s upload limit.' }));

    async function upload(files) {
      for (const file of files) {
        const line = h('li', {}, h('span', { text: `Uploading ${file.name}…` }));
        log.prepend(line);
        const data = new FormData();
        data.append('workspaceId', wsId());
        if (title.value.trim() && files.length === 1) data.append('title', title.value.trim());
        if (scope.value.trim()) data.append('scope', scope.value.trim());
        if (project.value.trim()) data.append('project', project.value.trim());
        data.append('file', file, file.name);
        try {
          const { data: accepted } = await api('POST', '/api/context-vault/documents/upload', { formData: data, query: { workspaceId: wsId() } });
          replace(line, h('span', { class: 'ok', text: `${file.name}: accepted (${accepted.document.status}).` }));
          announce(`${file.name} accepted`);
        } catch (error) {
          replace(line, errorBox(error, file.name));
        }
        onUploaded(scope.value.trim());
      }
      title.value = '';
    }

    fileInput.addEventListener('change', () => {
      const files = Array.from(fileInput.files || []);
      fileInput.value = '';
      if (files.length) upload(files);
    });
    for (const type of ['dragenter', 'dragover']) {
      zone.addEventListener(type, (event) => {
        event.preventDefault();
        if (event.dataTransfer) event.dataTransfer.dropEffect = 'copy';
        zone.classList.add('dragging');
      });
    }
    zone.addEventListener('dragleave', (event) => {
      if (!zone.contains(event.relatedTarget)) zone.classList.remove('dragging');
    });
    zone.addEventListener('drop', (event) => {
      event.preventDefault();
      zone.classList.remove('dragging');
      const files = Array.from((event.dataTransfer && event.dataTransfer.files) || []);
      if (files.length) upload(files);
    });

    return h('section', { class: 'card stack', 'aria-label': 'Upload documents' },
      h('h2', { text: 'Upload' }),
      h('div', { class: 'grid' },
        field('Title', title, 'Optional; the file name when blank.'),
        field('Scope', scope, 'Blank: the unscoped lane.'),
        field('Project', project)),
      zone, log);
  }

  function viewDocument(id) {
    const view = mount('Document');
    if (!needWorkspace(view)) return;
    const docScope = new URLSearchParams(window.location.search).get('scope') || '';
    const gen = state.gen;
    const back = h('p', {}, h('a', { href: '/app/vault', dataset: { link: '' }, text: '← All documents' }));
    const summary = h('div', { class: 'card stack', 'aria-live': 'polite' }, loading('Loading the document…'));
    const cited = h('section', { class: 'stack', 'aria-label': 'Cited memories' });
    const historyEl = h('section', { class: 'stack' });
    view.append(back, summary, cited, historyEl);
    let lastStatus = null;

    async function refresh() {
      try {
        const { data } = await get(`/api/context-vault/documents/${id}`, { workspaceId: wsId(), scope: docScope });
        if (!live(gen)) return;
        const doc = data.document;
        document.title = `${doc.title} · memvault`;
        main().querySelector('h1').textContent = doc.title;
        replace(summary,
          h('p', { class: 'muted', text: `${doc.sourceType} · uploaded ${formatDate(doc.createdAt)}${doc.completedAt ? ` · finished ${formatDate(doc.completedAt)}` : ''}` }),
          documentProgress(doc),
          h('p', { class: 'muted', text: `${plural(doc.chunkCount, 'chunk')}, ${plural(doc.extractedCount, 'memory', 'memories')} extracted` }),
          documentActions(doc, (deleted) => (deleted ? navigate('/app/vault') : refresh()), false));
        replace(historyEl, h('h2', { text: 'History' }),
          data.history.length === 0 ? empty('No events yet.') : h('ol', { class: 'timeline' }, data.history.map((e) => h('li', {},
            h('time', { datetime: e.at, text: formatDate(e.at) }), ' ',
            statusBadge(e.status),
            e.phase ? badge(`phase: ${e.phase}`, 'phase') : null,
            badge(`attempt ${e.attempt}`),
            e.message ? h('span', { class: 'muted', text: ` ${e.message}` }) : null))));
        if (doc.status !== lastStatus) {
          lastStatus = doc.status;
          loadCited(doc);
        }
        if (!TERMINAL.has(doc.status)) later(refresh, POLL_MS);
      } catch (error) {
        if (live(gen)) replace(summary, errorBox(error, 'Could not load the document'));
      }
    }

    async function loadCited(doc) {
      replace(cited, h('h2', { text: 'Cited memories' }), loading('Loading cited memories…'));
      try {
        const { data } = await get(`/api/context-vault/documents/${id}/memories`, { workspaceId: wsId(), scope: docScope });
        if (!live(gen)) return;
        const heading = h('h2', { text: `Cited memories (${data.total})` });
        if (data.memories.length === 0) {
          replace(cited, heading, empty(TERMINAL.has(doc.status)
            ? 'This document cites no memories.'
            : 'Memories appear here once the extract phase has run.'));
          return;
        }
        replace(cited, heading, h('ul', { class: 'cards' }, data.memories.map((m) => h('li', { class: 'card cited-memory' },
          h('p', { class: 'content', text: m.content }),
          h('div', { class: 'meta' }, badge(m.memoryType), badge(m.category, `cat-${m.category}`),
            m.scope ? badge(`scope: ${m.scope}`) : null, m.project ? badge(`project: ${m.project}`) : null),
          h('div', { class: 'evidence' }, m.evidence.map((e) => h('figure', { class: 'quote' },
            h('blockquote', { text: e.quote }),
            h('figcaption', { text: `${e.title}${e.sectionPath ? ` › ${e.sectionPath}` : ''} · chunk ${e.chunkIndex + 1} · confidence ${Math.round(e.confidence * 100)}%` }))))))));
      } catch (error) {
        if (live(gen)) replace(cited, h('h2', { text: 'Cited memories' }), errorBox(error, 'Could not load cited memories'));
      }
    }

    refresh();
  }

  // ----- the memory graph ----------------------------------------------------------------------

  // SVG elements need the SVG namespace; the HTML parser gives it to an <svg> element.
  let svgNamespace = null;
  function svg(tag, attrs) {
    if (!svgNamespace) {
      const probe = document.createElement('div');
      probe.innerHTML = '<svg></svg>';
      svgNamespace = probe.firstChild.namespaceURI;
    }
    const el = document.createElementNS(svgNamespace, tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === 'text') el.textContent = value;
      else el.setAttribute(key, String(value));
    }
    return el;
  }

  /** A simple force layout: pairwise repulsion, springs along links, a pull to the centre. */
  function createLayout(nodes, links) {
    const n = nodes.length;
    const radius = 40 * Math.sqrt(n + 1);
    nodes.forEach((node, i) => {
      // Deterministic start on a spiral, so the same graph lays out the same way.
      const angle = i * 2.399963;
      const r = radius * Math.sqrt((i + 0.5) / Math.max(n, 1));
      node.x = Math.cos(angle) * r;
      node.y = Math.sin(angle) * r;
      node.vx = 0;
      node.vy = 0;
    });
    const index = new Map(nodes.map((node) => [node.id, node]));
    const springs = links
      .map((l) => ({ a: index.get(l.source), b: index.get(l.target), derived: l.derived, strength: l.strength }))
      .filter((s) => s.a && s.b && s.a !== s.b);
    let alpha = 1;
    return {
      get alpha() { return alpha; },
      tick() {
        const repulsion = 2400;
        for (let i = 0; i < n; i += 1) {
          const a = nodes[i];
          for (let j = i + 1; j < n; j += 1) {
            const b = nodes[j];
            let dx = a.x - b.x;
            let dy = a.y - b.y;
            let d2 = dx * dx + dy * dy;
            if (d2 < 0.01) { dx = (i - j) * 0.1; dy = 0.1; d2 = dx * dx + dy * dy; }
            const d = Math.sqrt(d2);
            const force = (repulsion / d2) * alpha;
            const fx = (dx / d) * force;
            const fy = (dy / d) * force;
            a.vx += fx; a.vy += fy;
            b.vx -= fx; b.vy -= fy;
          }
        }
        for (const s of springs) {
          const rest = s.derived ? 110 - 40 * Math.max(0, Math.min(1, s.strength)) : 70;
          const dx = s.b.x - s.a.x;
          const dy = s.b.y - s.a.y;
          const d = Math.max(Math.sqrt(dx * dx + dy * dy), 0.01);
          const k = (s.derived ? 0.04 : 0.08) * alpha;
          const f = (d - rest) * k;
          const fx = (dx / d) * f;
          const fy = (dy / d) * f;
          s.a.vx += fx; s.a.vy += fy;
          s.b.vx -= fx; s.b.vy -= fy;
        }
        for (const node of nodes) {
          node.vx -= node.x * 0.012 * alpha;
          node.vy -= node.y * 0.012 * alpha;
          node.vx *= 0.6;
          node.vy *= 0.6;
          node.x += Math.max(-30, Math.min(30, node.vx));
          node.y += Math.max(-30, Math.min(30, node.vy));
        }
        alpha *= 0.985;
      },
    };
  }

  function viewGraph() {
    const view = mount('Memory graph', 'Each dot is a memory; lines join related ones. Select a dot to read it.');
    if (!needWorkspace(view)) return;
    const gen = state.gen;
    const params = new URLSearchParams(window.location.search);
    const scope = input({ name: 'scope', maxlength: 200, value: params.get('scope') || memoryFilters.scope });
    const limit = input({ type: 'number', name: 'limit', min: 1, max: 500, value: params.get('limit') || '100' });
    const area = h('div', { class: 'graph-area' });
    const f = form({ class: 'card filters', 'aria-label': 'Graph options' }, [
      h('div', { class: 'grid' }, field('Scope', scope, 'Blank: the unscoped lane.'), field('Nodes', limit, 'The most recent memories, 1 to 500.')),
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary', text: 'Draw graph' })),
    ], async () => { await load(); });
    const legend = h('div', { class: 'legend', 'aria-label': 'Legend' },
      h('span', { class: 'legend-item' }, legendLine(false), 'same note or same name (relation)'),
      h('span', { class: 'legend-item' }, legendLine(true), 'similar meaning (derived)'),
      CATEGORIES.map((c) => h('span', { class: 'legend-item' }, h('span', { class: `dot cat-${c}` }), c)));
    view.append(f, legend, area);

    function legendLine(derived) {
      const s = svg('svg', { width: 36, height: 10, 'aria-hidden': 'true', class: 'legend-line' });
      s.append(svg('line', { x1: 2, y1: 5, x2: 34, y2: 5, class: derived ? 'link derived' : 'link relation' }));
      return s;
    }

    let frame = null;
    state.cleanups.push(() => { if (frame) cancelAnimationFrame(frame); });

    async function load() {
      if (frame) cancelAnimationFrame(frame);
      replace(area, loading('Loading the graph…'));
      try {
        const { data } = await get('/api/memories/graph', { workspaceId: wsId(), scope: scope.value.trim(), limit: limit.value });
        if (!live(gen)) return;
        draw(data);
      } catch (error) {
        if (live(gen)) replace(area, errorBox(error, 'Could not load the graph'));
      }
    }

    function draw(data) {
      if (data.nodes.length === 0) {
        replace(area, empty('No memories in this scope yet: save some, then come back.'));
        return;
      }
      const nodes = data.nodes.map((node) => Object.assign({}, node));
      const byId = new Map(nodes.map((node) => [node.id, node]));
      const links = data.links.filter((l) => byId.has(l.source) && byId.has(l.target));
      const meta = data.meta;
      const summary = h('p', { class: 'count', text: `${plural(meta.totalNodes, 'memory', 'memories')}, ${plural(meta.totalLinks, 'link')} (${meta.relationLinks} relation, ${meta.derivedLinks} derived)` });
      const canvas = svg('svg', { class: 'graph', role: 'group', 'aria-label': 'Memory graph', viewBox: '-200 -200 400 400', preserveAspectRatio: 'xMidYMid meet' });
      const linkLayer = svg('g', { class: 'links' });
      const nodeLayer = svg('g', { class: 'nodes' });
      canvas.append(linkLayer, nodeLayer);
      const details = h('aside', { class: 'card graph-details', 'aria-live': 'polite', dataset: { testid: 'graph-details' } },
        note('Select a memory (click it, or Tab to it and press Enter) to read it here.'));

      const lineOf = new Map();
      for (const link of links) {
        // Derived links are dashed curves, relations straight lines: both stay visible when
        // the same two memories are linked both ways.
        const line = svg(link.derived ? 'path' : 'line', { class: `link ${link.derived ? 'derived' : 'relation'} type-${link.type}` });
        line.append(svg('title', { text: `${link.type.replace('_', ' ')}${link.derived ? ` (similarity ${link.strength.toFixed(2)})` : ''}` }));
        linkLayer.append(line);
        lineOf.set(link, line);
      }
      const groupOf = new Map();
      let selected = null;
      for (const node of nodes) {
        const r = 6 + Math.min(node.degree, 8) * 1.2;
        const g = svg('g', { class: 'node', tabindex: '0', role: 'button', 'aria-label': `Memory: ${node.label}`, 'data-id': node.id });
        // A larger transparent circle makes small dots easy to hit with a finger.
        g.append(svg('circle', { r: r + 8, class: 'hit' }), svg('circle', { r, class: `node-dot cat-${node.category}` }), svg('title', { text: node.label }));
        g.addEventListener('click', () => choose(node));
        g.addEventListener('keydown', (event) => {
          if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); choose(node); }
        });
        nodeLayer.append(g);
        groupOf.set(node, g);
      }

      function choose(node) {
        selected = node;
        for (const [n, g] of groupOf) g.classList.toggle('selected', n === node);
        const touching = links.filter((l) => l.source === node.id || l.target === node.id);
        for (const [l, line] of lineOf) line.classList.toggle('highlight', touching.includes(l));
        replace(details,
          h('h2', { text: 'Memory' }),
          h('p', { class: 'content', dataset: { testid: 'graph-node-content' }, text: node.content }),
          h('div', { class: 'meta' }, badge(node.category, `cat-${node.category}`),
            node.project ? badge(`project: ${node.project}`) : null,
            h('time', { datetime: node.createdAt, text: formatDate(node.createdAt) })),
          touching.length === 0 ? note('No links.') : h('div', {},
            h('h3', { text: `Linked to (${touching.length})` }),
            h('ul', { class: 'plain' }, touching.map((l) => {
              const other = byId.get(l.source === node.id ? l.target : l.source);
              return h('li', {},
                badge(l.type.replace('_', ' '), l.derived ? 'derived' : 'relation'), ' ',
                button(other.label, () => { choose(other); groupOf.get(other).focus(); }, 'link-button'));
            }))));
        announce(`Selected: ${node.label}`);
      }

      replace(area, summary, h('div', { class: 'graph-layout' }, h('div', { class: 'graph-frame' }, canvas), details));

      const layout = createLayout(nodes, links);
      const place = () => {
        let minX = Infinity; let minY = Infinity; let maxX = -Infinity; let maxY = -Infinity;
        for (const node of nodes) {
          minX = Math.min(minX, node.x); maxX = Math.max(maxX, node.x);
          minY = Math.min(minY, node.y); maxY = Math.max(maxY, node.y);
          groupOf.get(node).setAttribute('transform', `translate(${node.x.toFixed(1)} ${node.y.toFixed(1)})`);
        }
        for (const [l, line] of lineOf) {
          const a = byId.get(l.source);
          const b = byId.get(l.target);
          if (l.derived) {
            const mx = (a.x + b.x) / 2 + (b.y - a.y) * 0.18;
            const my = (a.y + b.y) / 2 - (b.x - a.x) * 0.18;
            line.setAttribute('d', `M${a.x.toFixed(1)} ${a.y.toFixed(1)} Q${mx.toFixed(1)} ${my.toFixed(1)} ${b.x.toFixed(1)} ${b.y.toFixed(1)}`);
          } else {
            line.setAttribute('x1', a.x.toFixed(1)); line.setAttribute('y1', a.y.toFixed(1));
            line.setAttribute('x2', b.x.toFixed(1)); line.setAttribute('y2', b.y.toFixed(1));
          }
        }
        // Fit the drawing, but never zoom a small graph in so far that its dots grow huge.
        const pad = 24;
        const width = Math.max(maxX - minX + pad * 2, 320);
        const height = Math.max(maxY - minY + pad * 2, 240);
        const cx = (minX + maxX) / 2;
        const cy = (minY + maxY) / 2;
        canvas.setAttribute('viewBox', `${(cx - width / 2).toFixed(1)} ${(cy - height / 2).toFixed(1)} ${width.toFixed(1)} ${height.toFixed(1)}`);
      };
      let ticks = 0;
      const step = () => {
        frame = null;
        if (!live(gen)) return;
        for (let i = 0; i < 3; i += 1) layout.tick();
        ticks += 3;
        place();
        if (layout.alpha > 0.02 && ticks < 600) frame = requestAnimationFrame(step);
        else canvas.dataset.settled = 'true';
      };
      place();
      frame = requestAnimationFrame(step);
      if (selected) choose(selected);
    }

    load();
  }

  // ----- settings: API keys --------------------------------------------------------------------

  function viewKeys() {
    const view = mount('API keys', 'Keys let your applications and MCP clients use this workspace.');
    if (!needWorkspace(view)) return;
    const gen = state.gen;
    if (!canManage()) {
      view.append(note(`Your role (${role()}) may not manage API keys: owners and admins create and revoke them.`, 'info'));
      return;
    }
    const listArea = h('div', { class: 'list-area' });
    const shown = h('div', { class: 'new-key' });
    const mine = role();
    const allowed = ROLES.slice(ROLES.indexOf(mine));
    const name = input({ name: 'name', required: true, maxlength: 100, placeholder: 'production' });
    const keyRole = select('role', allowed.map((r) => [r, r === mine ? `${r} (same as yours)` : r]), mine);
    const f = form({ class: 'card stack', 'aria-label': 'Create an API key' }, [
      h('h2', { text: 'Create a key' }),
      h('div', { class: 'grid' }, field('Name', name), field('Role', keyRole, 'Never above your own; it follows your role if you are demoted.')),
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary', text: 'Create key' })),
    ], async () => {
      const { data } = await api('POST', `/api/workspaces/${wsId()}/api-keys`, { body: { name: name.value, role: keyRole.value } });
      name.value = '';
      replace(shown, secretBox(`Your new key “${data.apiKey.name}”: copy it now, it is shown only once.`, data.key, 'new-key',
        h('details', { class: 'usage' }, h('summary', { text: 'How to use it' }),
          h('pre', { text: `curl -s ${window.location.origin}/api/memories \\\n  -H "X-API-Key: ${data.key}" \\\n  -H 'Content-Type: application/json' \\\n  -d '{"content": "I prefer dark mode"}'` }))));
      announce('Key created: copy it now');
      shown.querySelector('button').focus();
      await load();
    });
    view.append(f, shown, h('h2', { text: 'Keys' }), listArea);

    async function load() {
      replace(listArea, loading('Loading keys…'));
      try {
        const { data } = await get(`/api/workspaces/${wsId()}/api-keys`);
        if (!live(gen)) return;
        if (data.apiKeys.length === 0) {
          replace(listArea, empty('No keys yet.'));
          return;
        }
        replace(listArea, h('div', { class: 'table-wrap' }, h('table', {},
          h('caption', { class: 'visually-hidden', text: 'API keys' }),
          h('thead', {}, h('tr', {}, ['Name', 'Key', 'Role', 'Created', 'Last used', ''].map((t) => h('th', { scope: 'col', text: t })))),
          h('tbody', {}, data.apiKeys.map((k) => h('tr', { dataset: { id: k.id } },
            h('td', { 'data-label': 'Name', text: k.name }),
            h('td', { 'data-label': 'Key' }, h('code', { text: `${k.prefix}…` })),
            h('td', { 'data-label': 'Role', text: k.role }),
            h('td', { 'data-label': 'Created', text: formatDate(k.createdAt) }),
            h('td', { 'data-label': 'Last used', text: k.lastUsedAt ? formatDate(k.lastUsedAt) : 'never' }),
            h('td', { class: 'row-actions' }, confirmButton('Revoke', `Revoke “${k.name}”? Programs using it stop working.`, 'Yes, revoke', async () => {
              await api('DELETE', `/api/workspaces/${wsId()}/api-keys/${k.id}`);
              announce(`Key ${k.name} revoked`);
              await load();
            }, { 'aria-label': `Revoke ${k.name}` }))))))));
      } catch (error) {
        if (live(gen)) replace(listArea, errorBox(error, 'Could not load keys'));
      }
    }

    load();
  }

  // ----- settings: members and invitations -----------------------------------------------------

  function viewTeam() {
    const view = mount('Members and invitations');
    const gen = state.gen;
    const teamArea = h('div', { class: 'list-area' });
    const invitesArea = h('div', { class: 'list-area' });
    const shown = h('div', { class: 'new-invitation' });
    if (state.workspaceId) {
      if (canManage()) {
        const email = input({ type: 'email', name: 'email', required: true, autocomplete: 'off' });
        const inviteRole = select('role', ['admin', 'member', 'viewer'], 'member');
        const f = form({ class: 'card stack', 'aria-label': 'Invite someone' }, [
          h('h2', { text: 'Invite someone' }),
          h('div', { class: 'grid' }, field('Email', email), field('Role', inviteRole)),
          h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary', text: 'Create invitation' })),
          note('memvault sends no email: pass the link to the person you invite. They open it, sign in (or sign up) with this email, and accept.'),
        ], async () => {
          const { data } = await api('POST', `/api/workspaces/${wsId()}/invitations`, { body: { email: email.value, role: inviteRole.value } });
          email.value = '';
          const link = `${window.location.origin}/app/invitations/${encodeURIComponent(data.token)}`;
          replace(shown, secretBox(`Invitation for ${data.invitation.email} (${data.invitation.role}): share this link, it is shown only once.`, link, 'invite-link',
            h('p', { class: 'muted' }, 'Token: ', h('code', { text: data.token, dataset: { testid: 'invite-token' } }))));
          announce('Invitation created: share the link');
          shown.querySelector('button').focus();
          await load();
        });
        view.append(f, shown);
      } else {
        view.append(note(`Your role (${role()}) may see the team; owners and admins invite and change roles.`, 'info'));
      }
      view.append(h('h2', { text: 'Members' }), teamArea, invitesArea);
      load();
    } else {
      view.append(empty('You are not a member of any workspace yet.'));
    }
    view.append(newWorkspaceForm());

    async function load() {
      replace(teamArea, loading('Loading the team…'));
      clear(invitesArea);
      try {
        const { data } = await get(`/api/workspaces/${wsId()}/team`);
        if (!live(gen)) return;
        const me = data.currentUserRole;
        replace(teamArea, h('ul', { class: 'cards members' }, data.members.map((m) => memberRow(m, me))));
        if (['owner', 'admin'].includes(me)) {
          replace(invitesArea, h('h2', { text: 'Pending invitations' }),
            data.invitations.length === 0 ? empty('No pending invitations.')
              : h('ul', { class: 'cards invitations' }, data.invitations.map((i) => h('li', { class: 'card row' },
                h('div', {}, h('strong', { text: i.email }), ' ', badge(i.role), h('div', { class: 'muted', text: `expires ${formatDate(i.expiresAt)}` })),
                confirmButton('Revoke', `Revoke the invitation for ${i.email}?`, 'Yes, revoke', async () => {
                  await api('DELETE', `/api/workspaces/${wsId()}/invitations/${i.id}`);
                  announce('Invitation revoked');
                  await load();
                }, { 'aria-label': `Revoke the invitation for ${i.email}` })))));
        }
      } catch (error) {
        if (live(gen)) replace(teamArea, errorBox(error, 'Could not load the team'));
      }
    }

    function memberRow(m, me) {
      const self = state.user && m.userId === state.user.id;
      const manage = (me === 'owner') || (me === 'admin' && m.role !== 'owner');
      const row = h('li', { class: 'card row member', dataset: { email: m.email } },
        h('div', { class: 'who' }, h('strong', { text: m.name || m.email }), self ? ' (you)' : null,
          h('div', { class: 'muted', text: `${m.email} · joined ${formatDate(m.createdAt)}` })));
      const controls = h('div', { class: 'actions' });
      if (manage) {
        const options = me === 'owner' ? ROLES : ['admin', 'member', 'viewer'];
        const roleSelect = select('role', options, m.role);
        roleSelect.setAttribute('aria-label', `Role of ${m.email}`);
        const status = h('span', { class: 'inline-status', role: 'status' });
        controls.append(roleSelect, button('Change role', async (event) => {
          if (roleSelect.value === m.role) { status.textContent = 'Unchanged'; return; }
          event.target.disabled = true;
          try {
            await api('PATCH', `/api/workspaces/${wsId()}/members/${m.id}`, { body: { role: roleSelect.value } });
            announce(`${m.email} is now ${roleSelect.value}`);
            if (self) await refreshWorkspaces();
            await load();
          } catch (error) {
            event.target.disabled = false;
            replace(status, errorBox(error));
          }
        }, 'subtle', { 'aria-label': `Change the role of ${m.email}` }), status);
      } else {
        controls.append(badge(m.role));
      }
      if (manage || self) {
        controls.append(confirmButton(self ? 'Leave' : 'Remove', self ? 'Leave this workspace?' : `Remove ${m.email}? Their keys here are revoked.`, self ? 'Yes, leave' : 'Yes, remove', async () => {
          await api('DELETE', `/api/workspaces/${wsId()}/members/${m.id}`);
          announce(self ? 'You left the workspace' : `${m.email} removed`);
          if (self) {
            await refreshWorkspaces();
            render();
          } else {
            await load();
          }
        }, { 'aria-label': self ? 'Leave this workspace' : `Remove ${m.email}` }));
      }
      row.append(controls);
      return row;
    }
  }

  function newWorkspaceForm() {
    const name = input({ name: 'name', required: true, maxlength: 100 });
    return form({ class: 'card stack', 'aria-label': 'Create a workspace' }, [
      h('h2', { text: 'New workspace' }),
      field('Name', name, 'You will be its owner.'),
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button subtle', text: 'Create workspace' })),
    ], async () => {
      const { data } = await api('POST', '/api/workspaces', { body: { name: name.value } });
      await refreshWorkspaces(data.workspace.id);
      announce(`Workspace ${data.workspace.name} created`);
      render();
    });
  }

  // ----- invitations ---------------------------------------------------------------------------

  function viewInvitation(token) {
    markNav(null);
    const view = mount('Invitation');
    view.classList.add('narrow');
    const here = `/app/invitations/${encodeURIComponent(token)}`;
    if (!state.user) {
      view.append(h('div', { class: 'card stack' },
        h('p', { text: 'You have been invited to a memvault workspace. Sign in, or create an account, with the email address the invitation names; then accept it here.' }),
        h('div', { class: 'actions' },
          h('a', { class: 'button primary', href: `/app/sign-up?next=${encodeURIComponent(here)}`, dataset: { link: '' }, text: 'Create an account' }),
          h('a', { class: 'button subtle', href: `/app/sign-in?next=${encodeURIComponent(here)}`, dataset: { link: '' }, text: 'Sign in' }))));
      return;
    }
    const result = h('div', { 'aria-live': 'polite' });
    const accept = button('Accept invitation', async () => {
      accept.disabled = true;
      clear(result);
      try {
        const { data } = await api('POST', `/api/invitations/${encodeURIComponent(token)}/accept`);
        await refreshWorkspaces(data.workspace.id);
        replace(result, note(`You joined ${data.workspace.name} as ${data.member.role}.`, 'success'),
          h('p', {}, h('a', { class: 'button primary', href: '/app/memories', dataset: { link: '' }, text: `Open ${data.workspace.name}` })));
        accept.remove();
        announce(`Joined ${data.workspace.name}`);
      } catch (error) {
        accept.disabled = false;
        replace(result, errorBox(error, 'Could not accept'));
      }
    }, 'primary');
    view.append(h('div', { class: 'card stack' },
      h('p', {}, 'Accept this invitation as ', h('strong', { text: state.user.email }), '? The invitation must name this email address.'),
      h('div', { class: 'actions' }, accept),
      result));
  }

  // ----- subscription --------------------------------------------------------------------------

  function viewSubscription() {
    const view = mount('Subscription', 'The plan sets rate limits and how many memories the workspace may hold.');
    if (!needWorkspace(view)) return;
    const gen = state.gen;
    const area = h('div', { class: 'list-area' }, loading('Loading the subscription…'));
    view.append(area);

    async function load(message) {
      try {
        const { data } = await get('/api/subscription/current', { workspaceId: wsId() });
        if (!live(gen)) return;
        const used = data.memoryLimit > 0 ? Math.min(100, (data.memoryCount / data.memoryLimit) * 100) : 0;
        const bar = h('div', {
          class: `progress ${used >= 90 ? 'warn' : ''}`.trim(), role: 'progressbar', 'aria-label': 'Memories used',
          'aria-valuemin': '0', 'aria-valuemax': String(data.memoryLimit), 'aria-valuenow': String(data.memoryCount),
          'aria-valuetext': `${data.memoryCount} of ${data.memoryLimit} memories`,
        }, h('div', { class: 'progress-fill' }));
        bar.firstChild.style.width = `${used.toFixed(1)}%`;
        const facts = h('dl', { class: 'facts' },
          h('dt', { text: 'Plan' }), h('dd', {}, h('strong', { class: 'plan-name', dataset: { testid: 'plan' }, text: data.plan })),
          h('dt', { text: 'Status' }), h('dd', { text: data.status }),
          h('dt', { text: 'Billing' }), h('dd', { text: data.provider === 'local' ? 'self-hosted (no payment)' : data.provider }),
          data.renewsAt ? [h('dt', { text: 'Renews' }), h('dd', { text: formatDate(data.renewsAt) })] : null,
          data.cancelledAt ? [h('dt', { text: 'Cancelled' }), h('dd', { text: formatDate(data.cancelledAt) })] : null);
        const usage = h('section', { class: 'card stack' },
          h('h2', { text: 'Usage' }),
          h('p', { text: `${data.memoryCount.toLocaleString()} of ${data.memoryLimit.toLocaleString()} memories (${used.toFixed(1)}%)` }),
          bar,
          note('Current memories in every scope count; duplicates and new versions do not.'));
        const change = h('section', { class: 'card stack' }, h('h2', { text: 'Change plan' }));
        if (isOwner()) {
          const plan = select('plan', PLANS, data.plan);
          change.append(form({ class: 'stack', 'aria-label': 'Change plan' }, [
            field('Plan', plan),
            h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary', text: 'Change plan' })),
          ], async () => {
            const { data: answer } = await api('POST', '/api/subscription/change-plan', { body: { workspaceId: wsId(), plan: plan.value } });
            await refreshWorkspaces();
            announce(answer.message);
            await load(answer.message);
          }));
          if (data.provider !== 'local') {
            change.append(h('div', { class: 'actions' },
              button('Checkout', async () => {
                const { data: checkout } = await api('POST', '/api/subscription/checkout', { body: { workspaceId: wsId(), plan: change.querySelector('select').value } });
                window.location.assign(checkout.url);
              }, 'subtle'),
              button('Billing portal', async () => {
                const { data: portal } = await api('POST', '/api/subscription/portal', { body: { workspaceId: wsId() } });
                window.location.assign(portal.url);
              }, 'subtle')));
          }
        } else {
          change.append(note(`Only owners change the plan; your role is ${role()}.`, 'info'));
        }
        replace(area, message ? note(message, 'success') : null, h('section', { class: 'card' }, facts), usage, change);
      } catch (error) {
        if (live(gen)) replace(area, errorBox(error, 'Could not load the subscription'));
      }
    }

    load();
  }

  // ----- start ---------------------------------------------------------------------------------

  async function loadSession() {
    try {
      const { data } = await api('GET', '/api/auth/session');
      state.user = data.user;
      setWorkspaces(data.workspaces);
      return null;
    } catch (error) {
      state.user = null;
      return error.status === 401 ? null : error;
    }
  }

  async function boot() {
    document.addEventListener('click', (event) => {
      const link = event.target.closest && event.target.closest('a[data-link]');
      if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
      event.preventDefault();
      navigate(link.getAttribute('href'));
    });
    window.addEventListener('popstate', render);
    document.getElementById('sign-out').addEventListener('click', signOut);
    document.getElementById('workspace-select').addEventListener('change', (event) => {
      state.workspaceId = event.target.value;
      rememberWorkspace();
      memoryFilters.offset = 0;
      announce(`Workspace: ${workspace() ? workspace().name : ''}`);
      render();
    });
    const failure = await loadSession();
    if (failure) {
      const view = mount('memvault is not answering');
      view.append(errorBox(failure, 'Could not reach the server'), button('Try again', () => window.location.reload(), 'primary'));
      return;
    }
    render();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
  else boot();
})();
