/**
 * Whether this process runs from the packed swarm (scripts/pack-swarm.sh): there every
 * entry is an esbuild bundle `<entry>.mjs` beside the repository's layout of assets, run
 * by plain Node, with no tsx, esbuild or TypeScript sources. The pack's bundler
 * (deploy/pack.ts) defines __RESEARCH_PACKED__; in the repository it is never declared.
 */
declare const __RESEARCH_PACKED__: true | undefined;

export const PACKED = typeof __RESEARCH_PACKED__ !== "undefined";
