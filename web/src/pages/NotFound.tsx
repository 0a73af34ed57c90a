import { PageTitle } from '../components/ui';
import { t } from '../i18n';

export function NotFound() {
  return (
    <section class="card">
      <PageTitle>{t('notFound.title')}</PageTitle>
      <p>{t('notFound.text', { path: location.pathname })}</p>
      <p>
        <a href="/">{t('common.backToToday')}</a>
      </p>
    </section>
  );
}
