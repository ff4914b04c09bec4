import { Redis } from 'ioredis';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../helpers/db.js';
import { describeStorage, redisSpecific, redisStorage, sqlSpecific, sqlStorage } from './contract.js';

describeStorage('sql adapter on SQLite', true, () => sqlStorage('sqlite'), sqlSpecific);
describeStorage('sql adapter on PostgreSQL', Boolean(TEST_DATABASE_URL), () => sqlStorage('postgres'), sqlSpecific);
describeStorage('redis adapter', Boolean(TEST_REDIS_URL), () => redisStorage(new Redis(TEST_REDIS_URL!)), redisSpecific);
