/* views.js - shared pieces of the screens (panels that load and refresh
 * on their own, the pager) and the Overview, Queues, queue detail and
 * Recovery screens. */
'use strict';
var SB = window.SB = window.SB || {};
SB.views = SB.views || {};

SB.common = (function () {
  var h = SB.dom.h;

  /* A titled panel whose body loads independently of its neighbours, so
   * one failing route (a 501, a 503) leaves the rest of the screen. */
  function panel(title, cls, extra) {
    var body = h('div.panel-body', h('p.loading', 'Loading…'));
    var el = h('section.panel' + (cls ? '.' + cls.split(' ').join('.') : ''), {'aria-label': title},
      h('div.panel-head', h('h2', title), extra || null), body);
    return {el: el, body: body};
  }

  /* load(body, urls, force, render): GET every URL (conditionally), and
   * re-render only when one of them changed (or force, or the body shows
   * something else). render(results...) returns the body's new content.
   * An error shows the API's message with a Try again button. */
  async function load(body, urls, force, render, opts) {
    try {
      var results = await Promise.all(urls.map(function (u) {
        return typeof u === 'function' ? u() : SB.api.get(u, {conditional: true});
      }));
      var same = results.every(function (r) { return r && r.notModified; });
      if (!force && same && body.dataset.rendered === '1') return results;
      SB.dom.replace(body, render.apply(null, results));
      body.dataset.rendered = '1';
      return results;
    } catch (e) {
      if (opts && opts.onError) {
        var alt = opts.onError(e);
        if (alt) { SB.dom.replace(body, alt); body.dataset.rendered = ''; return null; }
      }
      SB.dom.showError(body, e, function () { return SB.app.refresh(true); });
      body.dataset.rendered = '';
      return null;
    }
  }

  function pageOf(url) {
    if (!url) return null;
    var m = /[?&]page=(\d+)/.exec(url);
    return m ? Number(m[1]) : null;
  }

  /* The pager of a list: First / Previous / Next / Last from the Link
   * header, "page X of Y (N things)" from Total-Count. */
  function pager(result, page, perPage, go, noun) {
    var total = result.total;
    var pages = total === null ? null : Math.max(1, Math.ceil(total / perPage));
    var links = result.links || {};
    var prev = pageOf(links.prev), next = pageOf(links.next), last = pageOf(links.last) || pages;
    if (!links.prev && page > 1) prev = page - 1;
    if (!links.next && pages && page < pages) next = page + 1;
    var btn = function (label, target, key) {
      return SB.dom.button(label, function () { go(target); }, 'small ghost',
        {disabled: !target || target === page, dataset: {key: 'pager-' + key}});
    };
    return h('nav.pager', {'aria-label': 'Pages'},
      btn('« First', page > 1 ? 1 : null, 'first'), btn('‹ Previous', prev, 'prev'),
      h('span.pager-text', 'Page ' + page + (pages ? ' of ' + pages : '') +
        (total !== null ? ' · ' + SB.dom.num(total) + ' ' + (noun || 'messages') : '')),
      btn('Next ›', next, 'next'), btn('Last »', last && last !== page ? last : null, 'last'));
  }

  function cell(content, cls) { return h('td' + (cls ? '.' + cls : ''), content); }
  function th(text, cls) { return h('th' + (cls ? '.' + cls : ''), {scope: 'col'}, text); }

  return {panel: panel, load: load, pager: pager, cell: cell, th: th, pageOf: pageOf};
})();

(function () {
  var h = SB.dom.h, C = SB.common, D = SB.dom;

  function screenHead(title, sub, tools) {
    return h('div.screen-head', h('div', h('h1', title), sub ? h('p.muted', sub) : null),
      tools ? h('div.screen-tools', tools) : null);
  }

  /* ------------------------------------------------------------ Overview */

  SB.views.overview = function (root) {
    var cards = C.panel('Failed messages', 'wide plain');
    var health = C.panel('Ingestion', 'third');
    var recovery = C.panel('Recovery', 'third');
    var byStatus = C.panel('Failed messages by status', 'third');
    var depth = C.panel('Queue depth over the last hour', 'wide');
    var through = C.panel('Throughput (all queues)', 'half');
    var failedChart = C.panel('Failed messages over time', 'half');
    var queues = C.panel('Queues', 'half');
    var top = C.panel('Where messages fail (unresolved)', 'half');
    var endpoints = C.panel('Endpoints', 'wide');
    D.append(root, [screenHead('Overview', 'What the bus is doing now. Refreshes every 2 seconds.'),
      h('div.grid', cards.el, health.el, recovery.el, byStatus.el, depth.el, through.el, failedChart.el,
        queues.el, top.el, endpoints.el)]);

    function statusCards(r) {
      var st = (r.data && r.data.statuses) || {};
      var un = st.unresolved || 0;
      return h('div.cards',
        D.card('Unresolved', D.num(un), un ? 'need attention' : 'everything is healthy',
          un ? 'bad' : 'good', '#/failed'),
        D.card('Retry pending', D.num(st.retryIssued || 0), 'sent back, not yet confirmed', '', '#/pending'),
        D.card('Resolved', D.num(st.resolved || 0), 'retried and processed', ''),
        D.card('Archived', D.num(st.archived || 0), 'put aside', '', '#/archived'));
    }

    function healthBody(r) {
      var d = r.data || {};
      var ing = d.ingestion || {};
      var ok = d.status === 'ready';
      return h('div.health',
        h('p.health-state.' + (ok ? 'good' : 'bad'), ok ? 'Ready' : 'Degraded'),
        h('dl.facts',
          h('dt', 'Last good pass'), h('dd', ing.last_ok_age_ms !== undefined ? D.ago(ing.last_ok_age_ms) + ' ago' : '—'),
          h('dt', 'Passes'), h('dd', D.num(ing.passes)),
          h('dt', 'Rows ingested'), h('dd', D.num(ing.rows)),
          h('dt', 'Errors'), h('dd', D.num(ing.errors)),
          h('dt', 'Failed imports'), h('dd.' + (d.failed_imports ? 'bad' : 'plain'), D.num(d.failed_imports))));
    }

    function recoveryBody(r) {
      var d = r.data || {};
      return h('div',
        h('div.cards.small',
          D.card('Outstanding', D.num(d.outstanding || 0), '', '', '#/recovery'),
          D.card('Stale', D.num(d.stale || 0), '', d.stale ? 'bad' : '', '#/recovery'),
          D.card('Orphaned', D.num(d.orphaned || 0), '', d.orphaned ? 'bad' : '', '#/recovery')));
    }

    function statusBars(r) {
      var st = (r.data && r.data.statuses) || {};
      return SB.charts.bars({label: 'Failed messages by status', items: [
        {name: 'Unresolved', value: st.unresolved || 0, cls: 'st-unresolved'},
        {name: 'Retry pending', value: st.retryIssued || 0, cls: 'st-retry'},
        {name: 'Resolved', value: st.resolved || 0, cls: 'st-resolved'},
        {name: 'Archived', value: st.archived || 0, cls: 'st-archived'}]});
    }

    function pts(list, f) {
      return (list || []).map(function (p) { return {t: D.parseTime(p.t), v: Number(f(p)) || 0}; })
        .filter(function (p) { return p.t; });
    }

    function depthChart(r) {
      var qs = ((r.data && r.data.queues) || []).slice();
      var lastReady = function (q) { var p = q.points || []; return p.length ? (p[p.length - 1].ready || 0) : 0; };
      qs.sort(function (a, b) { return lastReady(b) - lastReady(a); });
      return SB.charts.line({label: 'Ready messages per queue', width: 1200, height: 230,
        series: qs.slice(0, 8).map(function (q) {
          return {name: q.name, points: pts(q.points, function (p) { return p.ready; })};
        }), emptyText: 'No queue activity in the last hour'});
    }

    function throughputChart(r) {
      var sum = {};
      ((r.data && r.data.queues) || []).forEach(function (q) {
        (q.points || []).forEach(function (p) {
          var s = sum[p.t] = sum[p.t] || {t: p.t, published: 0, acked: 0};
          s.published += p.published || 0;
          s.acked += p.acked || 0;
        });
      });
      var list = Object.keys(sum).sort().map(function (k) { return sum[k]; });
      var iv = (r.data && r.data.interval_s) || 10;
      return SB.charts.line({label: 'Messages per ' + iv + ' s', unit: 'per ' + iv + ' s', series: [
        {name: 'published', points: pts(list, function (p) { return p.published; })},
        {name: 'acked', points: pts(list, function (p) { return p.acked; })}],
      emptyText: 'Nothing published in the last hour'});
    }

    function failedOverTime(r) {
      var d = r.data || {};
      return SB.charts.line({label: 'Failed messages', series: [
        {name: 'unresolved', points: pts(d.failed, function (p) { return p.unresolved; })},
        {name: 'archived', points: pts(d.failed, function (p) { return p.archived; })},
        {name: 'ingested', points: pts(d.ingestion, function (p) { return p.rows; })}],
      emptyText: 'No failures recorded in the last hour'});
    }

    function queueTable(r) {
      var list = (r.data || []).slice();
      if (!list.length) return D.empty('No queues yet', 'Publish a message (sqlbus publish QUEUE) and it shows here.');
      list.sort(function (a, b) { return (b.ready + b.dead_lettered) - (a.ready + a.dead_lettered); });
      return D.table('compact', [C.th('Queue'), C.th('Ready', 'n'), C.th('In flight', 'n'), C.th('Dead', 'n'),
        C.th('Oldest', 'n opt')],
      list.slice(0, 10).map(function (q) {
        return h('tr', {dataset: {row: q.name}},
          C.cell(D.link('#/queues/' + SB.api.seg(q.name), q.name, {dataset: {primary: '1', key: 'q-' + q.name}}),
            q.paused ? h('span.badge.paused', 'paused') : null),
          C.cell(D.num(q.ready), 'n'), C.cell(D.num(q.in_flight), 'n'),
          C.cell(D.num(q.dead_lettered), 'n' + (q.dead_lettered ? ' bad' : '')),
          C.cell(q.oldest_ready_age_ms !== undefined ? D.ago(q.oldest_ready_age_ms) : '—', 'n opt'));
      }));
    }

    function topBody(r) {
      var d = r.data || {};
      var items = function (list) {
        return (list || []).slice(0, 6).map(function (x) { return {name: x.name, value: x.count}; });
      };
      if (!(d.queues || []).length && !(d.endpoints || []).length) {
        return D.empty('No failed messages — everything is healthy');
      }
      return h('div.split',
        h('div', h('h3', 'By queue'), SB.charts.bars({label: 'Unresolved by queue', items: items(d.queues)})),
        h('div', h('h3', 'By endpoint'), SB.charts.bars({label: 'Unresolved by endpoint', items: items(d.endpoints)})),
        h('div', h('h3', 'By message type'), SB.charts.bars({label: 'Unresolved by message type', items: items(d.message_types)})));
    }

    /* Issue 22: the endpoint instances the workers' beats wrote, dead
     * ones first. */
    function endpointTable(r) {
      var list = (r.data || []).slice();
      if (!list.length) {
        return D.empty('No endpoints yet', 'A running worker (sqlbus work) writes its liveness and shows here.');
      }
      var dead = function (e) { return (e.heartbeat_information || {}).reported_status !== 'beating'; };
      list.sort(function (a, b) {
        return (dead(b) - dead(a)) || String(a.name).localeCompare(String(b.name)) ||
          String(a.host_display_name).localeCompare(String(b.host_display_name));
      });
      return D.table('compact', [C.th('Endpoint'), C.th('Host'), C.th('State'), C.th('Last beat'),
        C.th('Started', 'opt')],
      list.map(function (e) {
        var beat = e.heartbeat_information || {};
        var state = !dead(e) ? h('span.badge.status-resolved', 'beating')
          : e.stopped_at ? h('span.badge', 'stopped') : h('span.badge.status-unresolved', 'dead');
        return h('tr', {dataset: {row: 'endpoint-' + e.name + '@' + e.host_display_name}},
          C.cell(e.name), C.cell(e.host_display_name),
          C.cell([state, e.monitor_heartbeat ? null : h('span.badge.paused', 'muted')]),
          C.cell(D.time(beat.last_report_at)), C.cell(D.time(e.started_at), 'opt'));
      }));
    }

    var statsUrl = '/api/stats?minutes=60';
    return {
      title: 'Overview',
      refresh: function (force) {
        return Promise.all([
          C.load(cards.body, ['/api/sqlbus/errors/summary'], force, statusCards),
          C.load(byStatus.body, ['/api/sqlbus/errors/summary'], force, statusBars),
          C.load(top.body, ['/api/sqlbus/errors/summary'], force, topBody),
          C.load(health.body, ['/health/ready'], force, healthBody, {onError: function (e) {
            if (e.status === 503 && e.body && e.body.status === 'degraded') return healthBody({data: e.body});
            if (e.status === 503) {
              return h('div.health', h('p.health-state.bad', 'Database unavailable'), h('p.muted', e.message));
            }
            return null;
          }}),
          C.load(recovery.body, ['/api/recovery'], force, recoveryBody),
          C.load(depth.body, [statsUrl], force, depthChart),
          C.load(through.body, [statsUrl], force, throughputChart),
          C.load(failedChart.body, [statsUrl], force, failedOverTime),
          C.load(queues.body, ['/api/queues'], force, queueTable),
          C.load(endpoints.body, ['/api/endpoints'], force, endpointTable)
        ]);
      }
    };
  };

  /* -------------------------------------------------------------- Queues */

  /* A rate limit's interval after the slash: "s" for a second, else
   * its length ("250 ms", "5 min"). */
  function per(ms) {
    var units = [[86400000, 'd'], [3600000, 'h'], [60000, 'min'], [1000, 's']];
    for (var i = 0; i < units.length; i++) {
      if (ms % units[i][0] === 0) return (ms === units[i][0] ? '' : ms / units[i][0] + ' ') + units[i][1];
    }
    return ms + ' ms';
  }

  /* A queue's limits (T36): "max 5", "100/s". */
  function limitBadges(q) {
    return h('span',
      q.max_running ? h('span.badge.limit', {title: 'At most ' + q.max_running +
        ' messages handled at once, by every worker'}, 'max ' + q.max_running) : null,
      q.rate_limit ? h('span.badge.limit', {title: 'At most ' + q.rate_limit + ' claims per ' +
        D.ago(q.rate_interval_ms)}, q.rate_limit + '/' + per(q.rate_interval_ms)) : null);
  }

  /* A queue's state (T35), whether it orders by priority (T34), its
   * time to live (T40) and its limits (T36). */
  function stateBadge(q) {
    return h('span', h('span.badge.' + (q.paused ? 'paused' : 'active'), q.paused ? 'paused' : 'active'),
      q.prioritized ? h('span.badge.prioritized', {title: 'Claims take higher priorities first'}, 'priorities') : null,
      q.ttl_ms ? h('span.badge.ttl', {title: 'Messages no handler has started ' + D.ago(q.ttl_ms) +
        ' after their publish are dead-lettered “expired”'}, 'ttl ' + D.ago(q.ttl_ms)) : null,
      limitBadges(q));
  }

  SB.views.queues = function (root) {
    var filter = h('input', {type: 'search', placeholder: 'Filter queues', 'aria-label': 'Filter queues',
      on: {input: function () { if (last) D.replace(list.body, content(last)); }}});
    var list = C.panel('All queues', 'wide');
    var schedules = C.panel('Schedules', 'wide');
    var last = null;
    D.append(root, [screenHead('Queues', 'Every queue of the bus: what is waiting, running and dead-lettered.',
      filter), h('div.grid', list.el, schedules.el)]);

    /* Periodic jobs (T41), read-only: what publishes to which queue, and
     * when next. */
    function scheduleTable(r) {
      var data = r.data || [];
      if (!data.length) {
        return D.empty('No schedules', 'Add one with sqlbus schedule add NAME --cron EXPR --queue QUEUE ' +
          '(or PUT /api/schedules/NAME) and it shows here.');
      }
      return D.table('', [C.th('Schedule'), C.th('Queue'), C.th('When'), C.th('Missed'), C.th('Next')],
        data.map(function (s) {
          var when = s.cron !== undefined ? s.cron + ' (' + s.time_zone + ')' : 'every ' + D.ago(s.every_ms);
          return h('tr', {dataset: {row: 'schedule-' + s.name}},
            C.cell(s.name),
            C.cell(D.link('#/queues/' + SB.api.seg(s.queue), s.queue)),
            C.cell(when), C.cell(s.missed),
            C.cell(s.next !== undefined ? D.absTime(s.next) : '—'));
        }));
    }

    function content(r) {
      var f = filter.value.trim().toLowerCase();
      var data = (r.data || []).filter(function (q) { return !f || q.name.toLowerCase().indexOf(f) >= 0; });
      if (!(r.data || []).length) {
        return D.empty('No queues yet', 'Publish a message (sqlbus publish QUEUE, or POST ' +
          '/api/queues/QUEUE/messages) and its queue shows here.');
      }
      if (!data.length) return D.empty('No queue matches “' + filter.value + '”');
      return D.table('', [C.th('Queue'), C.th('State'), C.th('Ready', 'n'), C.th('Delayed', 'n'),
        C.th('In flight', 'n'), C.th('Dead-lettered', 'n'), C.th('Oldest ready', 'n opt')],
      data.map(function (q) {
        return h('tr', {dataset: {row: q.name}},
          C.cell(D.link('#/queues/' + SB.api.seg(q.name), q.name, {dataset: {primary: '1', key: 'q-' + q.name}})),
          C.cell(stateBadge(q)),
          C.cell(D.num(q.ready), 'n'), C.cell(D.num(q.delayed), 'n'), C.cell(D.num(q.in_flight), 'n'),
          C.cell(q.dead_lettered ? D.link(SB.app.href('/failed', {queue: q.name}), D.num(q.dead_lettered)) : '0',
            'n' + (q.dead_lettered ? ' bad' : '')),
          C.cell(q.oldest_ready_age_ms !== undefined ? D.ago(q.oldest_ready_age_ms) : '—', 'n opt'));
      }));
    }

    return {
      title: 'Queues',
      refresh: function (force) {
        return Promise.all([
          C.load(list.body, ['/api/queues'], force, function (r) {
            last = r;
            return content(r);
          }),
          C.load(schedules.body, ['/api/schedules'], force, scheduleTable)
        ]);
      }
    };
  };

  SB.views.queue = function (root, route) {
    var name = route.arg;
    var page = Number(route.params.get('page')) || 1;
    var perPage = 25;
    var open = {};
    var counts = C.panel('Counts', 'wide plain');
    var peek = C.panel('Messages (oldest ready first)', 'wide');
    D.append(root, [h('p.crumbs', D.link('#/queues', 'Queues'), ' / ', name),
      screenHead('Queue ' + name, 'A peek at the queue: nothing is claimed or changed.'),
      h('div.grid', counts.el, peek.el)]);

    /* Paused or not as this page last set it: GET /api/queues is a sample
     * up to 5 s old (docs/http-api.md). */
    var pausedNow = null;

    function pauseButton(q) {
      var paused = pausedNow !== null ? pausedNow : q.paused;
      var verb = paused ? 'resume' : 'pause';
      return D.button(paused ? 'Resume' : 'Pause', async function () {
        try {
          var res = await SB.api.post('/api/queues/' + SB.api.seg(name) + '/' + verb);
          pausedNow = !!(res.data && res.data.paused);
          D.toast('Queue ' + name + (pausedNow ? ' paused: workers stop claiming within a second'
            : ' resumed'), 'good');
          SB.app.refresh(true);
        } catch (e) {
          D.toast((paused ? 'Resume' : 'Pause') + ' failed: ' + e.message, 'bad');
        }
      }, paused ? 'primary' : '', {dataset: {key: 'pause', action: verb}});
    }

    function countsBody(r) {
      var q = (r.data || []).find(function (x) { return x.name === name; });
      if (!q) return D.empty('No queue named “' + name + '”', 'It has no messages, or it was never used.');
      var paused = pausedNow !== null ? pausedNow : q.paused;
      return h('div.cards',
        D.card('State', paused ? 'Paused' : 'Active', h('span', pauseButton(q), limitBadges(q)),
          paused ? 'warn' : 'good'),
        D.card('Ready', D.num(q.ready), q.oldest_ready_age_ms !== undefined ? 'oldest ' + D.ago(q.oldest_ready_age_ms) : ''),
        D.card('Delayed', D.num(q.delayed), ''), D.card('In flight', D.num(q.in_flight), ''),
        D.card('Dead-lettered', D.num(q.dead_lettered), q.dead_lettered ? 'see the failed messages' : 'none',
          q.dead_lettered ? 'bad' : 'good', SB.app.href('/failed', {queue: name})));
    }

    function bodyText(m) {
      if (m.body !== undefined) return typeof m.body === 'string' ? m.body : JSON.stringify(m.body);
      if (m.body_base64 !== undefined) return '(binary, base64) ' + m.body_base64;
      return '';
    }

    function peekBody(r) {
      var list = r.data || [];
      if (!list.length) return D.empty('The queue is empty', 'Nothing is waiting, delayed or in flight here.');
      var rows = [];
      list.forEach(function (m) {
        var key = String(m.id);
        var toggle = D.button(open[key] ? 'Hide' : 'Show', function () {
          open[key] = !open[key];
          SB.app.refresh(true);
        }, 'small ghost', {'aria-expanded': open[key] ? 'true' : 'false', dataset: {key: 'peek-' + key, primary: '1'}});
        var preview = bodyText(m);
        var cancel = D.button('Cancel', async function () {
          var ok = await SB.app.confirm('Cancel message ' + key,
            'It is dead-lettered now with reason “cancelled”. If a worker is handling it, the handler sees the ' +
            'cancel at its next lease renewal and its ack is refused.', 'Dead-letter it', true);
          if (!ok) return;
          try {
            var res = await SB.api.post('/api/queues/' + SB.api.seg(name) + '/messages/' + SB.api.seg(key) + '/cancel');
            D.toast('Message ' + key + ' cancelled' +
              (res.data && res.data.was === 'running' ? ' while a worker held it' : '') + ': dead-lettered', 'good');
            SB.app.refresh(true);
          } catch (e) {
            D.toast('Cancel failed: ' + e.message, 'bad');
          }
        }, 'small ghost', {dataset: {key: 'cancel-' + key, action: 'cancel'}});
        rows.push(h('tr', {dataset: {row: key}},
          C.cell(h('code', key)), C.cell(h('span', h('span.badge.state-' + m.state, m.state),
            m.priority ? h('span.badge.priority', {title: 'priority ' + m.priority}, 'priority ' + m.priority) : null,
            m.unique_key ? h('span.badge.key', {title: 'unique key: another message with it is refused while ' +
              'this one holds it'}, 'key ', h('code', m.unique_key)) : null,
            m.expires_at ? h('span.badge.expires', {title: 'dead-lettered “expired” if no handler has started it by ' +
              m.expires_at}, 'expires ', D.time(m.expires_at)) : null)),
          C.cell(D.num(m.attempts), 'n'), C.cell(D.time(m.created_at), 'opt'),
          C.cell(D.time(m.available_at), 'opt'), C.cell(D.bytes(m.body_size), 'n opt'),
          C.cell(h('span.preview', preview.length > 80 ? preview.slice(0, 80) + '…' : preview), 'opt'),
          C.cell(m.progress !== undefined ? h('span.progress', {title: m.progress},
            m.progress.length > 60 ? m.progress.slice(0, 60) + '…' : m.progress) : '', 'opt'),
          C.cell(h('span.actions', toggle, cancel))));
        if (open[key]) {
          var headers = m.headers || {};
          rows.push(h('tr.details', h('td', {colspan: 9},
            h('div.split',
              h('div', h('h3', 'Headers'), Object.keys(headers).length ? D.table('kv', [C.th('Header'), C.th('Value')],
                Object.keys(headers).sort().map(function (k) {
                  return h('tr', C.cell(h('code', k)), C.cell(String(headers[k])));
                })) : h('p.muted', 'No headers')),
              h('div', h('h3', 'Body'), h('pre.body', SB.detail ? SB.detail.pretty(preview, headers['sb-content-type'] || '') : preview))))));
        }
      });
      return h('div',
        D.table('', [C.th('Id'), C.th('State'), C.th('Attempts', 'n'), C.th('Created', 'opt'),
          C.th('Available', 'opt'), C.th('Size', 'n opt'), C.th('Body', 'opt'), C.th('Progress', 'opt'), C.th('')], rows),
        C.pager(r, page, perPage, function (p) {
          page = p;
          SB.app.setParams('/queues/' + SB.api.seg(name), {page: p > 1 ? p : ''});
          SB.app.refresh(true);
        }));
    }

    return {
      title: 'Queue ' + name,
      refresh: function (force) {
        return Promise.all([
          C.load(counts.body, ['/api/queues'], force, countsBody),
          C.load(peek.body, ['/api/queues/' + SB.api.seg(name) + '/messages' + SB.api.qs({page: page, per_page: perPage})],
            force, peekBody)
        ]);
      }
    };
  };

  /* ------------------------------------------------------------ Recovery */

  SB.views.recovery = function (root) {
    var state = h('select', {'aria-label': 'Show registrations in state', on: {change: function () { SB.app.refresh(true); }}},
      ['all', 'outstanding', 'stale', 'orphaned', 'dispatched'].map(function (s) {
        return h('option', {value: s}, s === 'all' ? 'All states' : s);
      }));
    var counts = C.panel('Counts', 'wide plain');
    var list = C.panel('Registrations (oldest first)', 'wide', state);
    D.append(root, [screenHead('Recovery', 'Requests waiting for a reply, and those whose handler is gone or late.'),
      h('div.grid', counts.el, list.el)]);

    return {
      title: 'Recovery',
      refresh: function (force) {
        return Promise.all([
          C.load(counts.body, ['/api/recovery'], force, function (r) {
            var d = r.data || {};
            return h('div.cards',
              D.card('Outstanding', D.num(d.outstanding || 0), 'waiting for a reply'),
              D.card('Stale', D.num(d.stale || 0), 'past their deadline', d.stale ? 'bad' : ''),
              D.card('Orphaned', D.num(d.orphaned || 0), 'their requester is gone', d.orphaned ? 'bad' : ''),
              D.card('Dispatched', D.num(d.dispatched || 0), 'sent to a recovery route'));
          }),
          C.load(list.body, ['/api/recovery'], force, function (r) {
            var regs = (r.data && r.data.registrations) || [];
            if (state.value !== 'all') regs = regs.filter(function (g) { return g.state === state.value; });
            if (!regs.length) {
              return D.empty(state.value === 'all' ? 'No recovery registrations' : 'No ' + state.value + ' registrations',
                'Requests made with a recovery handler show here until their reply arrives.');
            }
            return D.table('', [C.th('Correlation id'), C.th('Handler'), C.th('State'), C.th('Registered', 'opt'),
              C.th('Expires'), C.th('Dispatched', 'opt')],
            regs.map(function (g) {
              return h('tr', {dataset: {row: g.registration_id || g.correlation_id}},
                C.cell(h('code', {tabindex: '-1', dataset: {primary: '1'}}, g.correlation_id || '')),
                C.cell(g.handler || ''), C.cell(h('span.badge.rec-' + g.state, g.state)),
                C.cell(D.time(g.registered_at), 'opt'), C.cell(D.absTime(g.expires_at)),
                C.cell(D.time(g.dispatched_at), 'opt'));
            }));
          })
        ]);
      }
    };
  };

  SB.views.screenHead = screenHead;
})();
