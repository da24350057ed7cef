/*  test/unit/test_base_heap.c - the intrusive min-heap (base/heap.h)
    Order by (key, tie) against a sorted reference, removal of arbitrary
    nodes, re-keying, index tracking, and a randomised run checked after
    every operation against the heap property.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/heap.h"

typedef struct {
    qn_heap_node_t node;
    int value;
} item_t;

//  Every parent is <= its children and every node knows its index.
static void
s_check (const qn_heap_t *h)
{
    for (size_t i = 0; i < h->len; i++) {
        assert_true (h->items [i]->index == i);
        if (i > 0) {
            const qn_heap_node_t *p = h->items [(i - 1) / 2], *c = h->items [i];
            assert_true (p->key < c->key || (p->key == c->key && p->tie <= c->tie));
        }
    }
}

static int
s_cmp_node (const void *a_, const void *b_)
{
    const qn_heap_node_t *a = *(qn_heap_node_t * const *) a_, *b = *(qn_heap_node_t * const *) b_;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->tie < b->tie ? -1 : a->tie > b->tie;
}

static void
test_empty (void **state)
{
    (void) state;
    qn_heap_t h = QN_HEAP_INIT;
    assert_null (qn_heap_peek (&h));
    assert_null (qn_heap_pop (&h));
    assert_int_equal (qn_heap_size (&h), 0);
    qn_heap_free (&h);
}

static void
test_pop_order_with_ties (void **state)
{
    (void) state;
    enum { N = 1000 };
    item_t *items = calloc (N, sizeof *items);
    qn_heap_node_t *ref [N];
    qn_heap_t h = QN_HEAP_INIT;
    srand (7);
    for (int i = 0; i < N; i++) {
        items [i].value = i;
        items [i].node.key = rand () % 50;          //  Many equal keys
        items [i].node.tie = (uint64_t) (N - i);    //  Ties decide among them
        items [i].node.index = QN_HEAP_NONE;
        qn_heap_push (&h, &items [i].node);
        assert_true (qn_heap_node_queued (&items [i].node));
        ref [i] = &items [i].node;
    }
    s_check (&h);
    assert_int_equal (qn_heap_size (&h), N);
    qsort (ref, N, sizeof ref [0], s_cmp_node);
    for (int i = 0; i < N; i++) {
        assert_ptr_equal (qn_heap_peek (&h), ref [i]);
        qn_heap_node_t *n = qn_heap_pop (&h);
        assert_ptr_equal (n, ref [i]);
        assert_false (qn_heap_node_queued (n));
        item_t *it = qn_heap_item (n, item_t, node);
        assert_ptr_equal (&it->node, n);
    }
    assert_null (qn_heap_pop (&h));
    qn_heap_free (&h);
    free (items);
}

static void
test_remove_and_update (void **state)
{
    (void) state;
    enum { N = 64 };
    item_t items [N];
    qn_heap_t h = QN_HEAP_INIT;
    for (int i = 0; i < N; i++) {
        items [i].node.key = i * 10;
        items [i].node.tie = (uint64_t) i;
        qn_heap_push (&h, &items [i].node);
    }
    //  Remove the head, a leaf, and one in the middle.
    qn_heap_remove (&h, &items [0].node);
    qn_heap_remove (&h, &items [N - 1].node);
    qn_heap_remove (&h, &items [20].node);
    assert_false (qn_heap_node_queued (&items [20].node));
    s_check (&h);
    assert_int_equal (qn_heap_size (&h), N - 3);
    assert_ptr_equal (qn_heap_peek (&h), &items [1].node);
    //  Re-key: one to the front, one to the back.
    items [40].node.key = -5;
    qn_heap_update (&h, &items [40].node);
    items [1].node.key = 100000;
    qn_heap_update (&h, &items [1].node);
    s_check (&h);
    assert_ptr_equal (qn_heap_pop (&h), &items [40].node);
    assert_ptr_equal (qn_heap_pop (&h), &items [2].node);
    size_t left = qn_heap_size (&h);
    assert_int_equal (left, N - 5);
    qn_heap_node_t *last = NULL;
    for (size_t i = 0; i < left; i++)
        last = qn_heap_pop (&h);
    assert_ptr_equal (last, &items [1].node);
    qn_heap_free (&h);
}

//  Random pushes, pops, removes and updates against a brute-force minimum.
static void
test_random_against_reference (void **state)
{
    (void) state;
    enum { N = 512, OPS = 20000 };
    item_t *items = calloc (N, sizeof *items);
    for (int i = 0; i < N; i++)
        items [i].node.index = QN_HEAP_NONE;
    qn_heap_t h = QN_HEAP_INIT;
    srand (42);
    size_t in = 0;
    for (int op = 0; op < OPS; op++) {
        item_t *it = &items [rand () % N];
        int what = rand () % 4;
        if (!qn_heap_node_queued (&it->node)) {
            it->node.key = rand () % 1000 - 500;
            it->node.tie = (uint64_t) (it - items);
            qn_heap_push (&h, &it->node);
            in++;
        }
        else
        if (what == 0) {
            qn_heap_remove (&h, &it->node);
            in--;
        }
        else
        if (what == 1) {
            it->node.key = rand () % 1000 - 500;
            qn_heap_update (&h, &it->node);
        }
        else
        if (what == 2) {
            //  The popped node is the minimum of those queued.
            const qn_heap_node_t *min = NULL;
            for (int i = 0; i < N; i++)
                if (qn_heap_node_queued (&items [i].node)
                &&  (!min || s_cmp_node (&(const qn_heap_node_t *) { &items [i].node }, &min) < 0))
                    min = &items [i].node;
            assert_ptr_equal (qn_heap_pop (&h), min);
            in--;
        }
        assert_int_equal (qn_heap_size (&h), in);
        if (op % 97 == 0)
            s_check (&h);
    }
    s_check (&h);
    assert_true (in > 0);
    qn_heap_free (&h);
    for (int i = 0; i < N; i++)
        assert_false (qn_heap_node_queued (&items [i].node));
    free (items);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_empty),
        cmocka_unit_test (test_pop_order_with_ties),
        cmocka_unit_test (test_remove_and_update),
        cmocka_unit_test (test_random_against_reference),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
