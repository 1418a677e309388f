/**
 * Where reports go, safely (issue 13):
 *
 * - An input is never written: a report path (`-o`, `check --update`'s expectation files,
 *   `$GITHUB_STEP_SUMMARY`) that is the same file (device and inode, through any spelling, symlink
 *   or hard link, and a file redirected to stdin) as one of the inputs is refused before anything
 *   is opened.
 * - A report to a regular file (or a path that does not exist yet) is written to a temporary file
 *   in the same directory, fsynced and renamed over the target: an earlier report stays whole until
 *   the new one is, a failed or interrupted run leaves no partial report and no temporary file,
 *   and concurrent runs each leave a complete report. A FIFO or a device (`/dev/null`) is written
 *   in place, and so is a live `ndjson` stream (written as it goes, so a reader of the path sees
 *   each finding at once).
 * - A write error ends the run with exit 2 and one line naming the path and the error.
 */
import { accessSync, closeSync, constants, fchmodSync, fstatSync, fsyncSync, lstatSync, openSync, realpathSync, renameSync, statSync, unlinkSync, writeFileSync, writeSync, type Stats } from 'node:fs';
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { reasonOf } from '../ingest/open.js';

/** The report could not be written, or would have overwritten an input (exit 2). */
export class OutputError extends Error {}

/** Why a write failed, in words. */
export function writeReason(err: unknown): string {
  const code = (err as { code?: string } | null)?.code;
  switch (code) {
    case 'ENOSPC':
      return 'no space left on device';
    case 'EDQUOT':
      return 'disk quota exceeded';
    case 'EIO':
      return 'input/output error';
    case 'EROFS':
      return 'read-only file system';
    case 'EFBIG':
      return 'file too large';
    case 'ELOOP':
      return 'too many levels of symbolic links';
    case 'ENOTDIR':
      return 'a part of the path is not a directory';
    case 'ENOENT':
      return 'its directory does not exist';
    default:
      return reasonOf(err);
  }
}

/** Device and inode of the files being read, to refuse writing any of them. */
export class InputSet {
  private readonly ids = new Map<string, string>();

  /** `files` as given to the analysis ("-" is stdin: fd 0 is checked, so `-o x < x` is refused). */
  constructor(files: readonly string[]) {
    for (const f of files) this.add(f);
  }

  add(file: string): void {
    let st: Stats;
    try {
      st = file === '-' ? fstatSync(0) : statSync(file);
    } catch {
      return; // unreadable inputs are reported by the analysis
    }
    // A terminal, /dev/null as stdin and other character devices are not files a report can clobber.
    if (st.isCharacterDevice() || st.isDirectory()) return;
    const key = `${st.dev}:${st.ino}`;
    if (!this.ids.has(key)) this.ids.set(key, file === '-' ? 'stdin' : file);
  }

  /** The input `st` is, if any. */
  match(st: Stats): string | undefined {
    return this.ids.get(`${st.dev}:${st.ino}`);
  }

  /** Throws an OutputError when `path` (followed through links) is one of the inputs. */
  refuse(path: string, what = path): void {
    let st: Stats;
    try {
      st = statSync(path);
    } catch {
      return;
    }
    const input = this.match(st);
    if (input !== undefined) throw new OutputError(`refusing to write ${what}: it is the input ${input}${input === path ? '' : ' (the same file)'}; an input is never overwritten`);
  }

  /** Throws when stdout (fd 1) is one of the inputs: `analyze x >> x` would append the report to its own input. */
  refuseStdout(): void {
    let st: Stats;
    try {
      st = fstatSync(1);
    } catch {
      return;
    }
    if (!st.isFile() && !st.isFIFO()) return;
    const input = this.match(st);
    if (input !== undefined) throw new OutputError(`refusing to write the report to stdout: it is the input ${input}; an input is never overwritten`);
  }
}

/** How a report path will be written, decided before the analysis runs. */
export interface OutputPlan {
  /** As the user gave it (for messages). */
  path: string;
  /** Where it is written: the path itself, or for a symlink to a regular file, the file it points to. */
  target: string;
  /** Temporary file + rename; otherwise written in place. */
  atomic: boolean;
  /** Permission bits of the file being replaced, kept on the new one. */
  mode?: number;
}

/**
 * Check a report path and decide how to write it: refuse an input, a directory, a missing directory
 * or a file that cannot be written, before the analysis runs and before anything is truncated.
 * `live` (an ndjson stream) is written in place as it goes.
 */
export function planOutput(path: string, inputs: InputSet, live = false, what = path): OutputPlan {
  inputs.refuse(path, what);
  const fail = (err: unknown): never => {
    throw new OutputError(`cannot write ${what}: ${writeReason(err)}`);
  };
  let st: Stats | undefined;
  try {
    st = statSync(path);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== 'ENOENT') fail(err);
    let dangling = false;
    try {
      dangling = lstatSync(path).isSymbolicLink();
    } catch {
      /* does not exist */
    }
    // A link to nowhere: written through (it creates the file the link names).
    if (dangling) return { path: what, target: path, atomic: false };
  }
  if (st === undefined) {
    checkDirectory(dirname(path), what);
    return { path: what, target: path, atomic: !live };
  }
  if (st.isDirectory()) throw new OutputError(`cannot write ${what}: it is a directory`);
  if (!st.isFile()) return { path: what, target: path, atomic: false };
  try {
    accessSync(path, constants.W_OK);
  } catch (err) {
    fail(err);
  }
  if (live) return { path: what, target: path, atomic: false };
  const target = realpathSync(path);
  checkDirectory(dirname(target), what);
  return { path: what, target, atomic: true, mode: st.mode & 0o7777 };
}

function checkDirectory(dir: string, what: string): void {
  let st: Stats;
  try {
    st = statSync(dir);
  } catch (err) {
    throw new OutputError(`cannot write ${what}: ${(err as { code?: string }).code === 'ENOENT' ? 'its directory does not exist' : writeReason(err)}`);
  }
  if (!st.isDirectory()) throw new OutputError(`cannot write ${what}: ${dir} is not a directory`);
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch (err) {
    throw new OutputError(`cannot write ${what}: ${writeReason(err)} (directory ${dir})`);
  }
}

/** Temporary files being written; removed on exit, on a signal and on failure. */
const temporaries = new Map<string, string>();
/** Paths written in place right now (a live stream), for the interruption message. */
const inPlace = new Set<string>();
let exitHook = false;

/** Remove every temporary report file (synchronous: safe in a signal or exit handler). */
export function removeTemporaries(): string[] {
  const removed: string[] = [];
  for (const [t, path] of temporaries) {
    try {
      unlinkSync(t);
    } catch {
      /* already gone */
    }
    removed.push(path);
  }
  temporaries.clear();
  return removed;
}

/** Interrupted: remove temporaries and say what was (not) written. */
export function interruptedNote(): string {
  const removed = removeTemporaries();
  if (inPlace.size > 0) return `the report written as it goes to ${[...inPlace].join(', ')} ends here`;
  return removed.length > 0 ? `no report written (${removed.join(', ')} left as it was)` : 'no report written';
}

export interface Sink {
  /**
   * Resolves once the text is written or buffered. Live callers may ignore it (it is never an
   * unhandled rejection); a write error is then reported by close().
   */
  write(text: string): Promise<void>;
  /**
   * Write one live line (a finding of `-f ndjson`) now: settles when it is written, and rejects
   * with an OutputError as soon as that write fails, so that an alert lost to a full disk is said
   * at once, not at the next finding (which on quiet live input may be hours away). Its caller
   * does not wait for it. Absent where write() already does so (stdout).
   */
  alert?(text: string): Promise<void>;
  /** Flush, fsync and (atomic) rename over the target; rejects with an OutputError. */
  close(): Promise<void>;
  /** Give up: close and remove the temporary file; the target is left as it was. */
  abort(): Promise<void>;
}

/** Text gathered before one write of a temporary file: a JSON report comes in many small chunks. */
const BUFFER_BYTES = 64 * 1024;
/**
 * Bytes handed to the file system and not yet written, at most, before write() makes its caller
 * wait: the report is rendered while the earlier pieces are written (a write of a large report
 * took as long as rendering it, and the two ran one after the other), with memory bounded.
 */
export const IN_FLIGHT_BYTES = 1024 * 1024;

/** Open the sink a plan describes. `inputs` is checked again just before the rename. */
export async function openPlanned(plan: OutputPlan, inputs: InputSet): Promise<Sink> {
  const fail = (err: unknown) => (err instanceof OutputError ? err : new OutputError(`cannot write ${plan.path}: ${writeReason(err)}`));
  let tmp: string | undefined;
  let fh: FileHandle;
  try {
    if (plan.atomic) {
      tmp = join(dirname(plan.target), `.${basename(plan.target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
      if (!exitHook) {
        exitHook = true;
        process.on('exit', removeTemporaries);
      }
      temporaries.set(tmp, plan.path);
      fh = await open(tmp, 'wx', plan.mode ?? 0o666);
      if (plan.mode !== undefined) await fh.chmod(plan.mode).catch(() => undefined);
    } else {
      fh = await open(plan.target, 'w');
      inPlace.add(plan.path);
    }
  } catch (err) {
    if (tmp !== undefined) temporaries.delete(tmp);
    throw fail(err);
  }
  const tmpPath = tmp;
  let chain: Promise<void> = Promise.resolve();
  let failed: unknown;
  let pending: string[] = [];
  let pendingBytes = 0;
  let closed = false;
  const limit = plan.atomic ? BUFFER_BYTES : 0;
  // The writes started and not finished, oldest first, and their bytes (see IN_FLIGHT_BYTES).
  const writing: { done: Promise<void>; bytes: number }[] = [];
  let inFlight = 0;

  const flush = (): Promise<void> => {
    if (pending.length === 0) return chain;
    const buf = Buffer.from(pending.join(''), 'utf8');
    pending = [];
    pendingBytes = 0;
    const p = chain.then(async () => {
      if (failed !== undefined) throw failed;
      try {
        await writeAll(fh, buf);
      } catch (err) {
        failed ??= err;
        throw err;
      }
    });
    chain = p.catch(() => undefined);
    const entry = { done: chain, bytes: buf.length };
    writing.push(entry);
    inFlight += buf.length;
    void chain.then(() => {
      inFlight -= entry.bytes;
      writing.shift();
    });
    return p;
  };
  /** Wait, when too much is in flight, until the oldest writes are done (a failed one rejects). */
  const room = async (): Promise<void> => {
    while (inFlight > IN_FLIGHT_BYTES && writing.length > 0) await writing[0]!.done;
    if (failed !== undefined) throw failed;
  };
  const handled = (p: Promise<void>): Promise<void> => {
    const q = p.catch((err: unknown) => {
      throw fail(err);
    });
    q.catch(() => undefined);
    return q;
  };
  const cleanup = async () => {
    closed = true;
    inPlace.delete(plan.path);
    await fh.close().catch(() => undefined);
    if (tmpPath !== undefined) {
      await unlink(tmpPath).catch(() => undefined);
      temporaries.delete(tmpPath);
    }
  };

  return {
    write(text) {
      if (failed !== undefined) return handled(Promise.reject(failed));
      pending.push(text);
      pendingBytes += text.length;
      if (pendingBytes < limit) return Promise.resolve();
      // Its failure is the next write's or close()'s.
      handled(flush());
      return inFlight > IN_FLIGHT_BYTES ? handled(room()) : Promise.resolve();
    },
    alert(text) {
      if (failed !== undefined) return handled(Promise.reject(failed));
      pending.push(text);
      pendingBytes += text.length;
      return handled(flush());
    },
    async close() {
      if (closed) return;
      try {
        await flush();
        if (failed !== undefined) throw failed;
        if (plan.atomic || (await fh.stat()).isFile()) await fh.sync().catch((err: { code?: string }) => {
          if (err.code !== 'EINVAL' && err.code !== 'ENOTSUP') throw err;
        });
        closed = true;
        await fh.close();
        inPlace.delete(plan.path);
        if (tmpPath !== undefined) {
          // The target may have become an input since it was checked (a link made meanwhile).
          inputs.refuse(plan.target, plan.path);
          await rename(tmpPath, plan.target);
          temporaries.delete(tmpPath);
          await syncDirectory(dirname(plan.target));
        }
      } catch (err) {
        await cleanup();
        throw fail(err);
      }
    },
    abort: cleanup,
  };
}

/** Plan and open in one step (live outputs, opened before the analysis). */
export async function openOutputFile(path: string, inputs: InputSet, live = false): Promise<Sink> {
  return openPlanned(planOutput(path, inputs, live), inputs);
}

async function writeAll(fh: FileHandle, buf: Buffer): Promise<void> {
  let offset = 0;
  while (offset < buf.length) {
    const { bytesWritten } = await fh.write(buf, offset, buf.length - offset);
    if (bytesWritten <= 0) throw Object.assign(new Error('nothing written'), { code: 'EIO' });
    offset += bytesWritten;
  }
}

/** Make the rename itself durable; not every file system can fsync a directory. */
async function syncDirectory(dir: string): Promise<void> {
  let d: FileHandle | undefined;
  try {
    d = await open(dir, 'r');
    await d.sync();
  } catch {
    /* best effort */
  } finally {
    await d?.close().catch(() => undefined);
  }
}

let stdoutIsFile: boolean | undefined;

/**
 * Write to stdout. When stdout is a regular file (`> report.txt`), Node writes it with one
 * writeSync and drops a short write on a full disk without an error: here the write is repeated
 * until every byte is written, and an error (ENOSPC) ends the run as `onStdoutError` says.
 */
export function writeStdout(text: string): Promise<void> {
  if (stdoutIsFile === undefined) {
    try {
      stdoutIsFile = fstatSync(1).isFile();
    } catch {
      stdoutIsFile = false;
    }
  }
  if (stdoutIsFile) {
    const buf = Buffer.from(text, 'utf8');
    let offset = 0;
    try {
      while (offset < buf.length) offset += writeSync(1, buf, offset, buf.length - offset);
    } catch (err) {
      onStdoutError(err as NodeJS.ErrnoException);
    }
    return Promise.resolve();
  }
  if (process.stdout.write(text)) return Promise.resolve();
  return new Promise((resolve) => process.stdout.once('drain', () => resolve()));
}

/** The report to stdout; write errors other than EPIPE are handled by `onStdoutError`. */
export function stdoutSink(): Sink {
  const write = writeStdout;
  return {
    write,
    close: () =>
      new Promise((resolve) => {
        if (process.stdout.writableNeedDrain) process.stdout.once('drain', () => resolve());
        else resolve();
      }),
    abort: async () => undefined,
  };
}

/**
 * stdout failed. EPIPE (`| head`): quiet, with the exit code the run had. Anything else (ENOSPC on
 * `> /dev/full`, EIO): one line and exit 2, with no partial temporary file left behind.
 */
export function onStdoutError(err: NodeJS.ErrnoException): void {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  removeTemporaries();
  process.stderr.write(`stalewrite: cannot write stdout: ${writeReason(err)}\n`);
  process.exit(2);
}

/**
 * Write a whole small file (an expectation) atomically and synchronously: temporary file, fsync,
 * rename. Refuses an input. Throws OutputError; leaves no temporary file.
 */
export function writeFileAtomicSync(path: string, text: string, inputs: InputSet): void {
  const plan = planOutput(path, inputs);
  if (!plan.atomic) {
    try {
      writeFileSync(plan.target, text);
    } catch (err) {
      throw new OutputError(`cannot write ${plan.path}: ${writeReason(err)}`);
    }
    return;
  }
  const tmp = join(dirname(plan.target), `.${basename(plan.target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  temporaries.set(tmp, plan.path);
  if (!exitHook) {
    exitHook = true;
    process.on('exit', removeTemporaries);
  }
  let fd: number | undefined;
  try {
    fd = openSync(tmp, 'wx', plan.mode ?? 0o666);
    if (plan.mode !== undefined) fchmodSync(fd, plan.mode);
    const buf = Buffer.from(text, 'utf8');
    let offset = 0;
    while (offset < buf.length) offset += writeSync(fd, buf, offset, buf.length - offset);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    inputs.refuse(plan.target, plan.path);
    renameSync(tmp, plan.target);
    temporaries.delete(tmp);
  } catch (err) {
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch {
        /* closing a failed file */
      }
    }
    try {
      unlinkSync(tmp);
    } catch {
      /* not created */
    }
    temporaries.delete(tmp);
    throw err instanceof OutputError ? err : new OutputError(`cannot write ${plan.path}: ${writeReason(err)}`);
  }
}

/** Append to `$GITHUB_STEP_SUMMARY` (as GitHub expects); one OutputError line on failure. */
export async function appendSummary(path: string, text: string): Promise<void> {
  await appendSummaryChunks(path, [text]);
}

/**
 * appendSummary for a text given in pieces, written as they come. A summary that fails half-way
 * (a write error, or its renderer throwing) is cut off again: the file keeps what it held before.
 */
export async function appendSummaryChunks(path: string, chunks: Iterable<string>): Promise<void> {
  let fh: FileHandle | undefined;
  let start: number | undefined;
  let written = false;
  const cutBack = async () => {
    if (fh === undefined) return;
    if (written && start !== undefined) await fh.truncate(start).catch(() => undefined);
    await fh.close().catch(() => undefined);
  };
  try {
    fh = await open(path, 'a');
    const st = await fh.stat();
    if (st.isFile()) start = st.size;
  } catch (err) {
    await cutBack();
    throw new OutputError(`cannot write GITHUB_STEP_SUMMARY ${path}: ${writeReason(err)}`);
  }
  let pending: string[] = [];
  let pendingLength = 0;
  const flush = async () => {
    const buf = Buffer.from(pending.join(''), 'utf8');
    pending = [];
    pendingLength = 0;
    written = true;
    try {
      await writeAll(fh!, buf);
    } catch (err) {
      throw new OutputError(`cannot write GITHUB_STEP_SUMMARY ${path}: ${writeReason(err)}`);
    }
  };
  try {
    for (const chunk of chunks) {
      pending.push(chunk);
      pendingLength += chunk.length;
      if (pendingLength >= BUFFER_BYTES) await flush();
    }
    await flush();
    await fh.close().catch((err: unknown) => {
      throw new OutputError(`cannot write GITHUB_STEP_SUMMARY ${path}: ${writeReason(err)}`);
    });
    fh = undefined;
  } catch (err) {
    await cutBack();
    throw err;
  }
}
