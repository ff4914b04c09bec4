// For the knex CLI (`npx knex --knexfile knexfile.ts migrate:status`); the service itself
// migrates on start and through `npm run -s idp -- migrate`.
import { knexConfig } from './src/db/knex.js';

export default knexConfig(process.env.DATABASE_URL ?? 'sqlite:./data/idp.sqlite3');
