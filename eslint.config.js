// `npm run lint`: ESLint with typescript-eslint, plus the house's one structural rule: imports
// point down the floors (see docs/architecture.md), never up.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The floors of src/, bottom first. A file may import its own floor and the ones below it;
 * importing from a floor above is an error. The base (vocabulary, tokens, errors, config, log,
 * paths) is every file directly in src/ but app.ts and index.ts.
 */
const FLOORS = [
  ['db'],
  ['policies', 'presenters'],
  ['services'],
  ['provider'],
  ['edge', 'http', 'interactions', 'web', 'api', 'cli'],
];
const SURFACES = FLOORS.length - 1;
/** What a request or a command meets works through the services: it may name db/'s row types, never call db/. */
const SERVICES_ONLY = {
  group: ['**/db/**'],
  allowTypeImports: true,
  message: 'pages, the API and the CLI call services/, which own the queries; import only types from db/ here.',
};
const TOP = ['./app.js', '../app.js', '../../app.js', './index.js', '../index.js', '../../index.js'];

function above(level) {
  return FLOORS.slice(level + 1).flat();
}

const floorRules = [
  { files: ['src/*.ts'], ignores: ['src/app.ts', 'src/index.ts'], level: -1 },
  ...FLOORS.flatMap((folders, level) => folders.map((folder) => ({ files: [`src/${folder}/**`], level }))),
].map(({ files, ignores, level }) => ({
  files,
  ...(ignores ? { ignores } : {}),
  rules: {
    '@typescript-eslint/no-restricted-imports': ['error', {
      patterns: [
        ...(level === SURFACES ? [SERVICES_ONLY] : []),
        ...above(level).map((floor) => ({
          group: [`**/${floor}/**`],
          message: `imports point down the floors of src/ (db → policies/presenters → services → provider → edge/pages/API/CLI): ${floor}/ is above this file. Move what both need down instead.`,
        })),
        { group: TOP, message: 'app.ts and index.ts are the top floor: nothing imports them.' },
      ],
    }],
  },
}));

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'data/**', 'views/static/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2023, sourceType: 'module' },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-console': 'error',
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  { files: ['test/**', 'bench/**', 'scripts/**', 'examples/**', 'docs/**'], rules: { 'no-console': 'off' } },
  ...floorRules,
);
