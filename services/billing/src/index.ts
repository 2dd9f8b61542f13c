export * from './service';
export { billingService } from './gateway-service';
