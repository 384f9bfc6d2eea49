// graphile-worker@0.17.3 burn-down (rule P7): preload N no-op jobs with
// WorkerUtils.addJobs() (batches of 1000), then drain with run({ concurrency: H })
// and a no-op task; prints one JSON line. SB_GRAPHILE_MODE picks how it runs:
// "tuned" (the default, P6) as its docs advise for throughput, with the local
// queue (preset.worker.localQueue.size 500: jobs fetched in batches and handed
// out in the process) and batched completion (completeJobBatchDelay and
// failJobBatchDelay 0); "default" with the library's defaults (neither, both
// being opt-in in 0.17), to report beside. The pool is sized above the
// concurrency, as graphile-worker's docs ask (maxPoolSize >= concurrency).
import { parseArgs, peerRequire, now, sleep, log, emit, Seen } from './common.mjs'

const a = parseArgs(process.argv)
const { run, makeWorkerUtils } = peerRequire()('graphile-worker')
const poolMax = Math.max(10, a.concurrency + 2)
const mode = process.env.SB_GRAPHILE_MODE || 'tuned'
if (mode !== 'tuned' && mode !== 'default') throw new Error(`SB_GRAPHILE_MODE must be tuned or default (got ${mode})`)
const tuned = { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } }
const logFactory = () => (level, message) => { if (level === 'error' || level === 'warning') log('graphile', level, message) }
const { Logger } = peerRequire()('graphile-worker')
const logger = new Logger(logFactory)

async function preload () {
  const utils = await makeWorkerUtils({ connectionString: a.url, logger })
  try {
    await utils.migrate()
    const t0 = now()
    for (let i = 0; i < a.jobs; i += 1000) {
      const specs = []
      for (let k = i; k < Math.min(i + 1000, a.jobs); k++) specs.push({ identifier: 'noop', payload: { i: k } })
      await utils.addJobs(specs)
    }
    return (now() - t0) / 1000
  } finally {
    await utils.release()
  }
}

async function drain () {
  const seen = new Seen(a.jobs)
  const utils = await makeWorkerUtils({ connectionString: a.url, logger })
  const pending = async () => (await utils.withPgClient(c => c.query('SELECT count(*)::int AS n FROM graphile_worker._private_jobs'))).rows[0].n
  const t0 = now()
  const runner = await run({
    connectionString: a.url,
    concurrency: a.concurrency,
    maxPoolSize: poolMax,
    noHandleSignals: true,
    pollInterval: 2000,
    logger,
    ...(mode === 'tuned' ? { preset: tuned } : {}),
    taskList: { noop: async payload => { seen.mark(payload.i) } }
  })
  let tEnd = 0; let hung = false; let lastCalls = -1; let lastProgress = now()
  for (;;) {
    await sleep(seen.calls >= a.jobs ? 5 : 20)
    if (seen.calls !== lastCalls) { lastCalls = seen.calls; lastProgress = now() }
    if (seen.calls >= a.jobs && (await pending()) === 0) { tEnd = now(); break }
    if (now() - lastProgress > a.timeout * 100 || now() - t0 > a.timeout * 1000) { hung = true; tEnd = now(); break }
  }
  const secs = (tEnd - t0) / 1000
  await runner.stop()
  const left = await pending()
  await utils.release()
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

const out = { scenario: 'peer-burndown', peer: 'graphile-worker', version: '0.17.3', mode, jobs: a.jobs, concurrency: a.concurrency, pool_max: poolMax, phase: a.phase }
try {
  if (a.phase !== 'drain') out.preload_s = await preload()
  if (a.phase !== 'preload') Object.assign(out, await drain())
  else out.ok = true
} catch (e) {
  out.ok = false; out.error = String(e && e.stack || e)
}
emit(out)
process.exit(out.ok ? 0 : 1)
