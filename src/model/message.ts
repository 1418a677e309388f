/**
 * Finding messages, ESLint-style: each rule declares templates (`meta.messages`-like
 * `messages: { lateAccepted: '{writer} wrote with token {token} …' }`), reports a message id plus
 * data, and the engine renders the text once, when the finding is made. Reporters render the
 * resulting `message` and do their own escaping; this renderer escapes nothing.
 */

/** The data of a message: a flat record of strings and numbers, each substituted verbatim. */
export type MessageData = Readonly<Record<string, string | number>>;

/** `{name}`: a placeholder. Anything else in braces is literal text. */
const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Thrown when a template names a placeholder the data does not give. */
export class MessageDataError extends Error {}

/**
 * Replace each `{name}` in `template` with `data[name]` (numbers as `String(n)`), in one pass:
 * braces inside data values are never read as placeholders. Throws MessageDataError on a
 * placeholder with no data.
 */
export function formatMessage(template: string, data: MessageData): string {
  return template.replace(PLACEHOLDER, (_, name: string) => {
    if (!Object.prototype.hasOwnProperty.call(data, name)) throw new MessageDataError(`message template "${template}" has {${name}} but no data for it`);
    return String(data[name]);
  });
}

/** The placeholder names of a template, in order of first appearance. */
export function placeholdersOf(template: string): string[] {
  const out: string[] = [];
  for (const m of template.matchAll(PLACEHOLDER)) if (!out.includes(m[1]!)) out.push(m[1]!);
  return out;
}
