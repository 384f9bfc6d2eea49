/* groups.js - failure groups: the Groups screen (unresolved groups by
 * classifier, retry / archive a whole group with a progress bar, notes)
 * and the Archived groups panel of the Archived screen (restore a group). */
'use strict';
var SB = window.SB = window.SB || {};
SB.views = SB.views || {};

SB.groups = (function () {
  var h = SB.dom.h, D = SB.dom, C = SB.common, api = SB.api;
  var DEFAULT_CLASSIFIER = 'Exception Type and Stack Trace';
  var classifiersCache = null;

  async function classifiers() {
    if (classifiersCache) return classifiersCache;
    var r = await api.get('/api/recoverability/classifiers');
    classifiersCache = Array.isArray(r.data) && r.data.length ? r.data : [DEFAULT_CLASSIFIER];
    return classifiersCache;
  }

  function classifierSelect(current, onChange) {
    var sel = h('select', {'aria-label': 'Group by', on: {change: function () { onChange(sel.value); }}},
      h('option', {value: current, selected: true}, current));
    classifiers().then(function (list) {
      D.clear(sel);
      list.forEach(function (c) { sel.appendChild(h('option', {value: c, selected: c === current}, c)); });
    }, function () { /* the groups panel shows the API's error */ });
    return sel;
  }

  var SORTS = {
    count: function (a, b) { return (b.count || 0) - (a.count || 0); },
    last: function (a, b) { return String(b.last || '').localeCompare(String(a.last || '')); },
    first: function (a, b) { return String(a.first || '').localeCompare(String(b.first || '')); },
    title: function (a, b) { return String(a.title || '').localeCompare(String(b.title || '')); }
  };

  /* A cell's name, shown before it when a narrow window stacks the row. */
  function label(td, text) {
    td.dataset.label = text;
    return td;
  }

  /* A group's operation, from the live progress of one this tab started
   * or from the group's own operation_* fields. */
  function opCell(g, local) {
    var op = local[g.id];
    if (op && op.state !== 'completed' && op.state !== 'failed') {
      var frac = op.total ? (op.done || 0) / op.total : null;
      return h('div.opcell', D.progress(frac, op.kind + ' ' + g.title),
        h('span.op-text', op.kind + ' ' + op.state + (op.total ? ' · ' + (op.done || 0) + '/' + op.total : '')));
    }
    if (g.operation_state === 'running') {
      return h('div.opcell', D.progress(g.operation_progress !== undefined ? g.operation_progress : null, 'operation'),
        h('span.op-text', (g.operation_kind || 'operation') + ' running' +
          (g.operation_remaining_count !== undefined ? ' · ' + g.operation_remaining_count + ' left' : '')));
    }
    if (g.operation_state) {
      return h('span.op-text.' + (g.operation_state === 'completed' ? 'good' : 'bad'),
        (g.operation_kind || 'operation') + ' ' + g.operation_state,
        g.operation_completion_time ? h('span.muted', ' ', D.time(g.operation_completion_time)) : null);
    }
    return h('span.muted', '—');
  }

  async function editComment(g) {
    var area = h('textarea', {rows: 4, 'aria-label': 'Note', maxlength: 1000}, g.comment || '');
    var choice = await SB.app.dialog({title: (g.comment ? 'Edit the note of ' : 'Add a note to ') + g.title,
      body: h('div', h('p.muted', 'A note for your colleagues: what you know about this failure.'),
        h('label.field', h('span', 'Note'), area)),
      actions: [{label: 'Save note', value: 'save', primary: true,
        check: function () { return area.value.trim() ? '' : 'Write something, or cancel.'; }}]
        .concat(g.comment ? [{label: 'Remove note', value: 'remove', danger: true}] : [])});
    try {
      var path = '/api/recoverability/groups/' + api.seg(g.id) + '/comment';
      if (choice === 'save') {
        await api.post(path + api.qs({comment: area.value.trim()}));
        D.toast('Note saved', 'good');
      } else if (choice === 'remove') {
        await api.del(path);
        D.toast('Note removed', 'good');
      }
    } catch (e) {
      D.toast('The note was not saved: ' + e.message, 'bad');
    }
    SB.app.refresh(true);
  }

  function screen(root, route) {
    var classifier = route.params.get('classifier') || DEFAULT_CLASSIFIER;
    var sort = route.params.get('sort') || 'count';
    var local = {};           /* group id -> operation in progress here */
    var last = null;
    var sel = classifierSelect(classifier, function (v) {
      classifier = v;
      SB.app.setParams('/groups', {classifier: v === DEFAULT_CLASSIFIER ? '' : v, sort: sort === 'count' ? '' : sort});
      SB.app.refresh(true);
    });
    var sortSel = h('select', {'aria-label': 'Sort groups', on: {change: function () {
      sort = sortSel.value;
      SB.app.setParams('/groups', {classifier: classifier === DEFAULT_CLASSIFIER ? '' : classifier, sort: sort === 'count' ? '' : sort});
      if (last) D.replace(list.body, content(last));
    }}}, [['count', 'Most messages'], ['last', 'Latest failure'], ['first', 'Oldest first failure'], ['title', 'Name']]
      .map(function (s) { return h('option', {value: s[0], selected: s[0] === sort}, s[1]); }));
    var list = C.panel('Unresolved groups', 'wide');
    var hist = h('details.panel.wide.history', h('summary', 'Recent group operations'), h('div.history-body'));
    hist.addEventListener('toggle', function () { if (hist.open) SB.app.refresh(true); });
    D.append(root, [SB.views.screenHead('Groups', 'Failed messages grouped by what went wrong. Retry or archive a ' +
      'whole group at once.', [h('label.filter', h('span', 'Group by'), sel), h('label.filter', h('span', 'Sort'), sortSel)]),
    h('div.grid', list.el, hist)]);

    async function act(g, kind) {
      var verb = {retry: 'Retry', archive: 'Archive'}[kind];
      var ok = await SB.app.confirm(verb + ' the group',
        verb + ' all ' + D.num(g.count) + ' message' + (g.count === 1 ? '' : 's') + ' of “' + g.title + '”?' +
        (kind === 'archive' ? ' They move to Archived and can be restored from there.' : ' They go back to their queues.'),
        verb + ' group', kind === 'archive');
      if (!ok) return;
      local[g.id] = {kind: kind, state: 'queued'};
      if (last) D.replace(list.body, content(last));
      try {
        await SB.app.operation(verb + ' group “' + g.title + '”',
          api.post('/api/recoverability/groups/' + api.seg(g.id) + '/errors/' + kind),
          function (op) {
            local[g.id] = Object.assign({kind: kind}, op);
            if (last) D.replace(list.body, content(last));
          });
      } catch (e) {
        D.toast(verb + ' failed: ' + e.message, 'bad');
      }
      delete local[g.id];
      SB.app.refresh(true);
    }

    function content(r) {
      /* A closed group (its messages all retried or archived, listed for
       * ServicePulse's "Dismiss") is not an open group here. */
      var groups = (r.data || []).filter(function (g) { return !g.closed; }).sort(SORTS[sort] || SORTS.count);
      if (!groups.length) {
        return D.empty('No failure groups — everything is healthy',
          'Failed messages are grouped here by ' + classifier.toLowerCase() + '.');
      }
      return D.table('groups stack', [C.th('Group'), C.th('Messages', 'n'), C.th('First failure', 'opt'),
        C.th('Last failure'), C.th('Operation'), C.th('Actions')],
      groups.map(function (g) {
        var running = (local[g.id] && local[g.id].state !== 'completed' && local[g.id].state !== 'failed') ||
          g.operation_state === 'running';
        return h('tr', {dataset: {row: g.id, group: g.id}},
          C.cell(h('div',
            D.link(SB.app.href('/failed', {group: g.id, group_title: g.title}), g.title || '(untitled)',
              {dataset: {primary: '1', key: 'g-' + g.id}}),
            g.type ? h('div.muted.small', g.type) : null,
            g.comment ? h('p.comment', h('span.comment-mark', 'Note: '), g.comment) : null)),
          label(C.cell(h('span.gcount', D.num(g.count)), 'n inline'), 'Messages'),
          C.cell(D.time(g.first), 'opt'), label(C.cell(D.time(g.last), 'inline'), 'Last failure'),
          C.cell(opCell(g, local), 'opcol'),
          C.cell(h('div.actions',
            D.button('Retry', function () { act(g, 'retry'); }, 'small', {disabled: running,
              dataset: {key: 'gr-' + g.id, action: 'retry'}}),
            D.button('Archive', function () { act(g, 'archive'); }, 'small danger', {disabled: running,
              dataset: {key: 'ga-' + g.id, action: 'archive'}}),
            D.button(g.comment ? 'Edit note' : 'Add note', function () { editComment(g); }, 'small ghost',
              {dataset: {key: 'gc-' + g.id, action: 'comment'}}))));
      }));
    }

    return {
      title: 'Groups',
      refresh: function (force) {
        var jobs = [C.load(list.body, ['/api/recoverability/groups/' + api.seg(classifier)], force, function (r) {
          last = r;
          return content(r);
        })];
        if (hist.open) {
          jobs.push(C.load(hist.querySelector('.history-body'), ['/api/sqlbus/recoverability/history'], force, function (r) {
            var ops = (r.data || []).slice(0, 10);
            if (!ops.length) return D.empty('No group operations yet');
            return D.table('compact', [C.th('Group'), C.th('Operation'), C.th('Messages', 'n'), C.th('Finished')],
              ops.map(function (o) {
                return h('tr', C.cell(o.title || o.group_id || o.id || ''),
                  C.cell((o.operation_kind || o.kind || '') + ' ' + (o.operation_state || o.state || '')),
                  C.cell(D.num(o.count !== undefined ? o.count : o.total), 'n'),
                  C.cell(D.time(o.operation_completion_time || o.updated)));
              }));
          }));
        }
        return Promise.all(jobs);
      }
    };
  }

  /* The Archived screen's panel of archived groups. */
  function archivedPanel() {
    var classifier = DEFAULT_CLASSIFIER;
    var panel = C.panel('Archived groups', 'wide', null);
    var sel = classifierSelect(classifier, function (v) { classifier = v; SB.app.refresh(true); });
    panel.el.querySelector('.panel-head').appendChild(h('label.filter', h('span', 'Group by'), sel));
    return {
      el: panel.el,
      refresh: function (force) {
        return C.load(panel.body, ['/api/errors/groups/' + api.seg(classifier)], force, function (r) {
          var groups = r.data || [];
          if (!groups.length) return D.empty('No archived groups');
          return D.table('groups', [C.th('Group'), C.th('Messages', 'n'), C.th('Last failure'), C.th('Operation'),
            C.th('Actions')],
          groups.map(function (g) {
            return h('tr', {dataset: {row: 'ag-' + g.id}},
              C.cell(h('div', h('span', {tabindex: '-1', dataset: {primary: '1'}}, g.title || ''),
                g.comment ? h('p.comment', h('span.comment-mark', 'Note: '), g.comment) : null)),
              C.cell(D.num(g.count), 'n'), C.cell(D.time(g.last)), C.cell(opCell(g, {}), 'opcol'),
              C.cell(D.button('Restore group', async function () {
                var ok = await SB.app.confirm('Restore the group', 'Bring all ' + D.num(g.count) +
                  ' archived messages of “' + g.title + '” back to the failed list?', 'Restore group');
                if (!ok) return;
                try {
                  await SB.app.operation('Restore group “' + g.title + '”',
                    api.post('/api/recoverability/groups/' + api.seg(g.id) + '/errors/unarchive'));
                } catch (e) { D.toast('Restore failed: ' + e.message, 'bad'); }
              }, 'small', {dataset: {key: 'ua-' + g.id, action: 'unarchive'}})));
          }));
        });
      }
    };
  }

  return {screen: screen, archivedPanel: archivedPanel, classifiers: classifiers};
})();

SB.views.groups = SB.groups.screen;
