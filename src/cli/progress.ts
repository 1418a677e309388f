/** Progress on stderr (bytes and lines read, rate, current file), for terminals only. */
import type { ProgressInfo } from '../analyze.js';
import { escapeTerminal } from '../report/escape.js';

const EVERY_MS = 250;
/** Nothing is shown for inputs read faster than this. */
const AFTER_MS = 1000;

export class Progress {
  private readonly start = Date.now();
  private last = 0;
  private shown = false;

  update(p: ProgressInfo): void {
    const now = Date.now();
    if (now - this.start < AFTER_MS || now - this.last < EVERY_MS) return;
    this.last = now;
    const secs = Math.max(0.001, (now - this.start) / 1000);
    const mb = p.bytes / 1e6;
    const line = `stalewrite: ${mb.toFixed(1)} MB, ${p.lines.toLocaleString('en-US')} lines (${(mb / secs).toFixed(1)} MB/s) ${escapeTerminal(p.file)}`;
    process.stderr.write(`\r\u001b[2K${line.slice(0, (process.stderr.columns ?? 100) - 1)}`);
    this.shown = true;
  }

  clear(): void {
    if (!this.shown) return;
    process.stderr.write('\r\u001b[2K');
    this.shown = false;
  }
}
