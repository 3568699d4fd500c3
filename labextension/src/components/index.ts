export * from './ErrorMessage';
export * from './HeteroPanelView';
export * from './VersionBanner';
