// Shared helpers of the peer burn-down scripts (our harness code, not peer
// code). The peers themselves are installed by bench/run into a scratch
// folder outside the repository and loaded from there with createRequire.
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'

export function parseArgs (argv) {
  const a = { url: null, jobs: 100000, concurrency: 1, phase: 'both', queue: 'bench', timeout: 900 }
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i]; const v = argv[i + 1]
    if (k === '--url') { a.url = v; i++ } else if (k === '--jobs') { a.jobs = Number(v); i++ } else if (k === '--concurrency') { a.concurrency = Number(v); i++ } else if (k === '--phase') { a.phase = v; i++ } else if (k === '--queue') { a.queue = v; i++ } else if (k === '--timeout') { a.timeout = Number(v); i++ } else { throw new Error(`unknown option ${k}`) }
  }
  if (!a.url) throw new Error('--url is required')
  if (!['preload', 'drain', 'both'].includes(a.phase)) throw new Error('--phase must be preload, drain or both')
  return a
}

// require() rooted in the scratch folder where bench/run installed the peers.
export function peerRequire () {
  const dir = process.env.SB_PEERS_DIR
  if (!dir) throw new Error('SB_PEERS_DIR is not set (bench/run sets it)')
  return createRequire(join(dir, 'node_modules', 'noop.js'))
}

export const now = () => performance.now()
export const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))
export const log = (...m) => console.error('peer:', ...m)
export const emit = obj => process.stdout.write(JSON.stringify(obj) + '\n')

// Per-job bookkeeping: lost and duplicated deliveries are detected, not just counted.
export class Seen {
  constructor (n) { this.n = n; this.bits = new Uint8Array(n); this.calls = 0; this.dups = 0; this.bad = 0 }
  mark (i) {
    this.calls++
    if (!Number.isInteger(i) || i < 0 || i >= this.n) { this.bad++; return }
    if (this.bits[i]) this.dups++
    this.bits[i] = 1
  }

  missing () { let m = 0; for (let i = 0; i < this.n; i++) if (!this.bits[i]) m++; return m }
}
