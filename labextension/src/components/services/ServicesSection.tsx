import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { IService } from '../../types';
import { Section } from '../common/Section';
import { ServiceCard } from './ServiceCard';
import { ITrafficPoint } from './TrafficChart';

/** Props of `ServicesSection`. */
export interface IServicesSectionProps {
  services: readonly IService[];
  /** By endpoint: a name is unique per tenant only. */
  history: ReadonlyMap<string, readonly ITrafficPoint[]>;
  trans: TranslationBundle;
  onRollBack: (service: IService) => void;
}

/** The tenant's online services, each with its endpoint, traffic and rollout. */
export function ServicesSection(props: IServicesSectionProps): JSX.Element {
  const { services, history, trans } = props;
  return (
    <Section id="services" title={trans.__('Services')}>
      {services.length === 0 ? (
        <div className="jp-hetero-hint">
          {/* The magic's name is a value: the translator reads '%%' in a message as an escaped '%'. */}
          {trans.__('No online service yet: start one with %1 or jupyter hetero services create.', '%%hetero_serve')}
        </div>
      ) : (
        services.map(service => (
          <ServiceCard
            key={service.endpoint}
            service={service}
            history={history.get(service.endpoint) ?? []}
            trans={trans}
            onRollBack={props.onRollBack}
          />
        ))
      )}
    </Section>
  );
}
