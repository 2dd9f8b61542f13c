export * from './service';
export { textService } from './gateway-service';
