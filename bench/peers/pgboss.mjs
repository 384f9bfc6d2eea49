// pg-boss@10.4.2 burn-down (rule P7): preload N no-op jobs with the bulk
// insert() API, then drain with `--concurrency H` workers; prints one JSON
// line. pg-boss 10 has no per-job concurrency option: each work() call adds
// one polling worker that fetches `batchSize` jobs, runs the handler, and
// polls again no sooner than pollingIntervalSeconds (minimum 0.5 s) after
// the previous fetch started. So concurrency H = H work() calls, each with
// batchSize SB_PGBOSS_BATCH (default 100) and the minimum polling interval;
// the handler runs the jobs of a batch concurrently (Promise.allSettled),
// the pattern the maintainer recommends for v10 (timgit/pg-boss#542).
import { parseArgs, peerRequire, now, sleep, log, emit, Seen } from './common.mjs'

const a = parseArgs(process.argv)
const PgBoss = peerRequire()('pg-boss')
const batchSize = Number(process.env.SB_PGBOSS_BATCH || 100)
const pollingIntervalSeconds = Number(process.env.SB_PGBOSS_POLL_S || 0.5)
const poolMax = Math.max(10, a.concurrency + 2)

const boss = new PgBoss({
  connectionString: a.url,
  max: poolMax,
  supervise: false, // no maintenance/monitoring loop during the measurement
  schedule: false // no cron loop
})
boss.on('error', e => log('pg-boss error:', e.message))

async function preload () {
  const q = await boss.getQueue(a.queue)
  if (!q) await boss.createQueue(a.queue)
  const t0 = now()
  for (let i = 0; i < a.jobs; i += 1000) {
    const chunk = []
    for (let k = i; k < Math.min(i + 1000, a.jobs); k++) chunk.push({ name: a.queue, data: { i: k } })
    await boss.insert(chunk)
  }
  return (now() - t0) / 1000
}

async function pending (db) {
  const r = await db.executeSql(
    "SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state < 'completed'", [a.queue])
  return r.rows[0].n
}

async function drain () {
  const seen = new Seen(a.jobs)
  const db = boss.getDb()
  const t0 = now()
  for (let w = 0; w < a.concurrency; w++) {
    await boss.work(a.queue, { batchSize, pollingIntervalSeconds },
      jobs => Promise.allSettled(jobs.map(async job => { seen.mark(job.data.i) })))
  }
  let tEnd = 0; let hung = false; let lastCalls = -1; let lastProgress = now()
  for (;;) {
    await sleep(seen.calls >= a.jobs ? 5 : 20)
    if (seen.calls !== lastCalls) { lastCalls = seen.calls; lastProgress = now() }
    // complete() is not awaited by pg-boss's worker loop: the last acks are
    // only done once the database shows no job left below 'completed'.
    if (seen.calls >= a.jobs && (await pending(db)) === 0) { tEnd = now(); break }
    if (now() - lastProgress > a.timeout * 100 || now() - t0 > a.timeout * 1000) { hung = true; tEnd = now(); break }
  }
  const secs = (tEnd - t0) / 1000
  await boss.offWork(a.queue)
  const left = await pending(db)
  const missing = seen.missing()
  return {
    ok: !hung && missing === 0 && seen.dups === 0 && seen.bad === 0 && left === 0,
    seconds: secs,
    jobs_per_s: a.jobs / secs,
    handler_calls: seen.calls,
    missing,
    duplicates: seen.dups,
    left,
    hung
  }
}

await boss.start()
const out = { scenario: 'peer-burndown', peer: 'pg-boss', version: '10.4.2', jobs: a.jobs, concurrency: a.concurrency, batch_size: batchSize, polling_interval_s: pollingIntervalSeconds, pool_max: poolMax, phase: a.phase }
try {
  if (a.phase !== 'drain') out.preload_s = await preload()
  if (a.phase !== 'preload') Object.assign(out, await drain())
  else out.ok = true
} catch (e) {
  out.ok = false; out.error = String(e && e.stack || e)
}
await boss.stop({ graceful: false, wait: true, timeout: 2000 }).catch(() => {})
emit(out)
process.exit(out.ok ? 0 : 1)
