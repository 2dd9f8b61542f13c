import type { Upload } from './upload';

/** Extensions OpenAI accepts for a container the gateway knows under another name. */
const EXTENSION_ALIAS: Record<string, string> = { mpeg: 'mp3', mpga: 'mp3', mp4: 'm4a', oga: 'ogg' };

/** Media types a client may give the file part, by container. */
const MEDIA_TYPE: Record<string, string> = {
  'audio/wav': 'wav',
  'audio/wave': 'wav',
  'audio/x-wav': 'wav',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/ogg': 'ogg',
  'audio/flac': 'flac',
  'audio/x-flac': 'flac',
  'audio/mp4': 'm4a',
  'audio/m4a': 'm4a',
  'audio/x-m4a': 'm4a',
  'audio/webm': 'webm',
};

/**
 * The container of an uploaded file: its extension (what OpenAI reads), else its media type; else what was given,
 * for the schema to refuse naming the containers it takes.
 */
export function containerOf(file: { filename: string; mimeType: string }): string {
  const dot = file.filename.lastIndexOf('.');
  const ext = dot >= 0 ? file.filename.slice(dot + 1).toLowerCase() : '';
  if (ext) return EXTENSION_ALIAS[ext] ?? ext;
  return MEDIA_TYPE[file.mimeType.toLowerCase()] ?? (file.mimeType || 'none');
}

/**
 * An upload as the object transcriptionUpload validates. A field sent once is its text; sent several times it stays
 * a list, which the schema refuses where it wants one value (it takes a list only for timestamp_granularities).
 */
export function uploadFields(upload: Upload): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, values] of upload.fields) out[name] = name === 'timestamp_granularities' || values.length > 1 ? values : values[0];
  // A file under another part name is no recording: the schema then says `file` is required, and what it is.
  const f = upload.file;
  if (f?.field === 'file') out.file = { data: f.data, format: containerOf(f) };
  return out;
}
