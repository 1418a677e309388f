/**
 * Escaping of untrusted log content, one function per output. Log lines are attacker-influenced
 * text (CWE-117): every reporter passes every log-derived string through the function for its format.
 */

// C0 controls, DEL, C1 controls, and bidi/invisible formatting characters.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/g;

function visible(c: string): string {
  const code = c.charCodeAt(0);
  if (c === '\n') return '\\n';
  if (c === '\r') return '\\r';
  if (c === '\t') return '\\t';
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
}

/** Terminal: control, bidi and other invisible characters become visible \xNN / \u{NNNN}; never emitted raw. */
export function escapeTerminal(text: string): string {
  return text.replace(UNSAFE, visible);
}

/** HTML text and attribute values (always quote attributes with "). Control characters made visible. */
export function escapeHtml(text: string): string {
  return escapeTerminal(text).replace(/[&<>"'`]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * Markdown inline text (also safe inside table cells): Markdown punctuation is backslash-escaped,
 * HTML is entity-escaped, and control characters are made visible, so log content can neither
 * break the table nor inject links, images or HTML.
 */
export function escapeMarkdown(text: string): string {
  return escapeTerminal(text)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/[\\`*_[\]#|~]/g, (c) => `\\${c}`);
}

/** A fence for a Markdown code block that no backtick run in `content` can close. */
export function markdownFence(content: string): string {
  let longest = 0;
  for (const m of content.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
  return '`'.repeat(Math.max(3, longest + 1));
}

/** Characters XML 1.0 cannot carry at all, even escaped. */
// eslint-disable-next-line no-control-regex
const XML_INVALID = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** XML text and attribute values: entities for markup, invalid characters made visible. */
export function escapeXml(text: string): string {
  return text
    .replace(XML_INVALID, (c) => `\\u{${c.charCodeAt(0).toString(16)}}`)
    .replace(/[&<>"']/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&apos;'));
}

/** GitHub workflow command message: %, CR and LF are encoded. */
export function escapeGithubData(text: string): string {
  return text.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/** GitHub workflow command property (file, title): also : and ,. */
export function escapeGithubProperty(text: string): string {
  return escapeGithubData(text).replace(/:/g, '%3A').replace(/,/g, '%2C');
}
