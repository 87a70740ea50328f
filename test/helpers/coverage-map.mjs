// Tells tap which files coverage counts: the TypeScript sources (server and bench), not the bundles the bench's hosts
// run (bench/.hosts, built from those sources when a test launches a host), which would count as files of their own.
export default () => ['src/**/*.ts', 'bench/**/*.ts'];
