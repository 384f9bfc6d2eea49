/* api.js - the dashboard's HTTP client for sqlbus serve (docs/http-api.md).
 * JSON in and out; mutations always send Content-Type: application/json;
 * a token, when the server asks for one (401), is kept in sessionStorage
 * and sent as Authorization: Bearer (no cookies). GETs made for a live
 * refresh send If-None-Match with the last ETag of that URL, and a 304
 * hands back the last answer marked notModified so the screen can skip
 * re-rendering. */
'use strict';
var SB = window.SB = window.SB || {};

SB.api = (function () {
  var TOKEN_KEY = 'sqlbus.token';
  var cache = {};        // url -> {etag, data, total, links, headers}
  var listeners = {unreachable: [], unauthorized: []};

  function ApiError(status, code, message, field, body) {
    this.status = status;
    this.body = body || null;
    this.code = code || '';
    this.message = message || ('HTTP ' + status);
    this.field = field || '';
  }
  ApiError.prototype = Object.create(Error.prototype);
  ApiError.prototype.name = 'ApiError';

  function token() {
    try { return sessionStorage.getItem(TOKEN_KEY); } catch (e) { return null; }
  }
  function setToken(t) {
    try {
      if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* storage refused: the token lasts until reload */ }
    cache = {};
  }

  function on(event, fn) { listeners[event].push(fn); }
  function emit(event, arg) { listeners[event].forEach(function (fn) { fn(arg); }); }

  /* Link: <url>; rel="next", <url>; rel="last" -> {next: url, last: url} */
  function parseLink(header) {
    var out = {};
    if (!header) return out;
    header.split(',').forEach(function (part) {
      var m = /<([^>]*)>\s*;\s*rel="?([a-z]+)"?/i.exec(part.trim());
      if (m) out[m[2].toLowerCase()] = m[1];
    });
    return out;
  }

  /* request(method, url, {body, conditional, accept, raw}) -> Promise of
   * {status, data, total, links, location, headers, notModified}. Throws
   * ApiError (status 0 when the server cannot be reached). */
  async function request(method, url, opts) {
    opts = opts || {};
    var headers = {Accept: opts.accept || 'application/json'};
    var t = token();
    if (t) headers.Authorization = 'Bearer ' + t;
    var init = {method: method, headers: headers, cache: 'no-store', credentials: 'omit',
      redirect: 'error'};
    if (method !== 'GET' && method !== 'HEAD') {
      headers['Content-Type'] = 'application/json';
      if (opts.body !== undefined) init.body = JSON.stringify(opts.body);
    }
    var cached = cache[url];
    if (method === 'GET' && opts.conditional && cached && cached.etag) {
      headers['If-None-Match'] = cached.etag;
    }
    var resp;
    try {
      resp = await fetch(url, init);
    } catch (e) {
      emit('unreachable', true);
      throw new ApiError(0, 'unreachable', 'the server cannot be reached');
    }
    emit('unreachable', false);
    if (resp.status === 304 && cached) {
      return Object.assign({}, cached, {status: 304, notModified: true});
    }
    var type = resp.headers.get('Content-Type') || '';
    var data = null;
    if (method !== 'HEAD' && resp.status !== 204) {
      if (opts.raw) {
        data = await resp.text();
      } else if (type.indexOf('json') >= 0) {
        var text = await resp.text();
        try { data = text ? JSON.parse(text) : null; } catch (e) {
          throw new ApiError(resp.status, 'bad_json', 'the server sent JSON that does not parse');
        }
      } else {
        data = await resp.text();
      }
    }
    if (!resp.ok) {
      var body = data && typeof data === 'object' ? data : {};
      if (resp.status === 401) emit('unauthorized', body.message);
      throw new ApiError(resp.status, body.error, body.message || (resp.status + ' ' + resp.statusText),
        body.field, data);
    }
    var total = resp.headers.get('Total-Count');
    var result = {
      status: resp.status, data: data, headers: resp.headers, notModified: false,
      total: total === null ? null : Number(total),
      links: parseLink(resp.headers.get('Link')),
      location: resp.headers.get('Location'),
      etag: resp.headers.get('ETag'),
      contentType: type
    };
    if (method === 'GET') {
      if (Object.keys(cache).length > 200) cache = {};   /* time-range URLs change every minute */
      if (result.etag) cache[url] = result; else delete cache[url];
    }
    return result;
  }

  /* Identical conditional GETs made at once (panels of one screen that
   * read the same route) share one request. */
  var inflight = {};
  function get(url, opts) {
    if (!opts || !opts.conditional) return request('GET', url, opts);
    if (inflight[url]) return inflight[url];
    var p = request('GET', url, opts);
    inflight[url] = p;
    var done = function () { delete inflight[url]; };
    p.then(done, done);
    return p;
  }
  function post(url, body) { return request('POST', url, {body: body}); }
  function patch(url, body) { return request('PATCH', url, {body: body}); }
  function put(url, body) { return request('PUT', url, {body: body}); }
  function del(url, body) { return request('DELETE', url, {body: body}); }

  function sleep(ms) { return new Promise(function (r) { setTimeout(r, ms); }); }

  /* Follow a durable operation (202 + Location: /api/operations/{id})
   * until it is completed or failed, calling onProgress(op) on each poll.
   * Resolves with the last state. An answer without a Location resolves
   * at once with {state: 'completed'}. */
  async function follow(result, onProgress, intervalMs) {
    var loc = result && result.location;
    if (!loc && result && result.data && result.data.id && result.status === 202) {
      loc = '/api/operations/' + encodeURIComponent(result.data.id);
    }
    if (!loc) {
      var done = {state: 'completed', kind: result && result.data && result.data.kind};
      if (onProgress) onProgress(done);
      return done;
    }
    var op = result.data || {state: 'queued'};
    if (onProgress) onProgress(op);
    var misses = 0;
    for (;;) {
      await sleep(intervalMs || 400);
      try {
        op = (await get(loc)).data || op;
        misses = 0;
      } catch (e) {
        if (e.status === 404 || ++misses > 20) throw e;
        continue;
      }
      if (onProgress) onProgress(op);
      if (op.state === 'completed' || op.state === 'failed') return op;
    }
  }

  /* Query strings from objects; empty values left out. */
  function qs(params) {
    var parts = [];
    Object.keys(params).forEach(function (k) {
      var v = params[k];
      if (v === undefined || v === null || v === '') return;
      parts.push(encodeURIComponent(k) + '=' + encodeURIComponent(v));
    });
    return parts.length ? '?' + parts.join('&') : '';
  }

  function seg(s) { return encodeURIComponent(s); }

  return {
    request: request, get: get, post: post, patch: patch, put: put, del: del,
    follow: follow, qs: qs, seg: seg, token: token, setToken: setToken, on: on,
    parseLink: parseLink, ApiError: ApiError, sleep: sleep
  };
})();
