import { ServerConnection } from '@jupyterlab/services';

import { requestAPI } from './handler';

/** What `GET /hetero/api/v1/version` answers. */
export interface IVersionInfo {
  version: string;
}

/** The typed operations of the jupyter-hetero REST API that the UI uses. */
export interface IHeteroService {
  getVersion(): Promise<IVersionInfo>;
}

/** The jupyter-hetero REST API, reached through the Jupyter server connection. */
export class HeteroService implements IHeteroService {
  constructor(
    private readonly _settings: ServerConnection.ISettings = ServerConnection.makeSettings()
  ) {}

  getVersion(): Promise<IVersionInfo> {
    return requestAPI<IVersionInfo>('version', { method: 'GET' }, this._settings);
  }
}
