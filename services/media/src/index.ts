// The package's entry: re-exports only, so no module of the package needs to import it back (docs/decisions/007).
export { createMediaService, type MediaService, type MediaServiceDeps } from './service';
export { FileRefs, type FileRef, type NewFileRef } from './files/refs';
export { INTERNAL_FILES_PATH } from './files/internal';
export { migrations } from './migrations';
export { mediaService } from './gateway-service';
export { openMedia, s3OptionsOf, type MediaOptions } from './open';
export { filesystemStorage } from './storage/filesystem';
export { type S3Storage, type S3StorageOptions, s3Storage } from './storage/s3';
export type { MediaStorage } from './storage/port';
