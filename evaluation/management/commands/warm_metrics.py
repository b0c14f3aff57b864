from django.core.management.base import BaseCommand

from evaluation.warmup import warm_kernels


class Command(BaseCommand):
    help = (
        "Compile the scoring's numba kernels into NUMBA_CACHE_DIR (a few seconds the first time on a 2-core "
        "machine, under a second once cached), so no page or task pays it. Workers do this on their own at start."
    )

    def handle(self, *args, **options):
        seconds = warm_kernels()
        self.stdout.write(f"metric kernels ready in {seconds:.1f} s")
