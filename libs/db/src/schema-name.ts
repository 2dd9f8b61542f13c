/** What a service's schema may be called: it is spliced into SQL (CREATE SCHEMA, search_path), never a parameter. */
export const SCHEMA_NAME = /^[a-z_][a-z0-9_]*$/;
