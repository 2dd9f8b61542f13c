// Imported by main.ts before the rest of the gateway's code, for its effect: see early-databases.ts.
import { startDatabasesEarly } from './early-databases';

startDatabasesEarly();
