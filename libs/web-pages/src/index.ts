export { CONTENT_SECURITY_POLICY, PAGE_HEADERS } from './headers';
export { PAGE_FILES, pagesHandler } from './static-pages';
export { statusPage, type StatusPageData } from './status-html';
