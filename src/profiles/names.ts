/** Profile names and the mapping error, apart from the profiles themselves (loaded only when used). */

export const PROFILE_NAMES = ['canonical', 'app-json', 'logfmt', 'otlp-json', 'k8s-leaderelection', 'zookeeper', 'auto'] as const;
export type ProfileName = (typeof PROFILE_NAMES)[number];

/** A mapping file (or a built-in profile's mapping) that cannot be used, with the JSON path at fault. */
export class MappingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MappingError';
  }
}
