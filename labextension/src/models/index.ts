export * from './base';
export * from './evidence';
export * from './hetero';
export * from './launch';
export * from './logs';
export * from './parameters';
export * from './usage';
export * from './work';
