#!/usr/bin/env node
// `npm run docs`: regenerate the rule table in README.md from the rule modules (needs a build).
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { renderRules } from '../dist/cli/rules.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const readme = join(root, 'README.md');
const text = readFileSync(readme, 'utf8');
const start = text.indexOf('<!-- rules:start');
const end = text.indexOf('<!-- rules:end -->');
if (start === -1 || end === -1) throw new Error('README.md has no rules:start/rules:end markers');
const open = text.indexOf('-->', start) + 3;
const next = text.slice(0, open) + '\n' + renderRules('markdown', false) + text.slice(end);
if (next !== text) {
  writeFileSync(readme, next);
  console.log('README.md: rule table updated');
} else console.log('README.md: rule table up to date');
