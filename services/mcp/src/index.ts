export * from './service';
export { mcpService } from './gateway-service';
